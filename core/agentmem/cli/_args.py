"""argparse types of the numeric flags: each checks its range as the command line is parsed,
so a value out of range is a usage error naming the flag before anything runs (a
``calibrate --folds 0`` would otherwise collect cases for minutes, then fail).

Example:
    >>> whole(2)("5")
    5
    >>> whole(2)("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be at least 2, got 0
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from ..config import MAX_TOP_K

__all__ = ["FRACTION", "SECONDS", "TOP_K", "number", "whole"]


def whole(minimum: int = 0, maximum: int | None = None) -> Callable[[str], int]:
    """A whole number in ``minimum..maximum``."""

    def parse(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {raw!r}") from None
        _check(value, minimum, maximum)
        return value

    return parse


def number(
    minimum: float = 0.0, maximum: float | None = None, *, above: bool = False
) -> Callable[[str], float]:
    """A finite number in ``minimum..maximum`` (with ``above``, greater than ``minimum``)."""

    def parse(raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a number, got {raw!r}")
        if above and value <= minimum:
            raise argparse.ArgumentTypeError(f"must be greater than {minimum:g}, got {raw}")
        _check(value, minimum, maximum)
        return value

    return parse


def _check(value: float, minimum: float, maximum: float | None) -> None:
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum:g}, got {value:g}")
    if maximum is not None and value > maximum:
        raise argparse.ArgumentTypeError(f"must be at most {maximum:g}, got {value:g}")


#: ``top_k`` of a recall: 1..MAX_TOP_K.
TOP_K = whole(1, MAX_TOP_K)
#: A score, importance or ratio in [0, 1].
FRACTION = number(0.0, 1.0)
#: A duration: 0 or more seconds.
SECONDS = number(0.0)

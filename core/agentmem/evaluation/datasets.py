"""Datasets that ship inside agentmem, asked for by name.

``golden`` is the project's golden dataset (125 labelled recall cases); ``calibration`` holds
57 more in the same format (paraphrase-only facts among session chatter, tool outputs, document
chunks, chat turns, unrelated queries), on which with the golden set recall's scores are
calibrated. Both are package data, so ``agentmem eval --dataset golden`` and
:func:`golden_dataset_path` work after a plain ``pip install agentmem-layer``, outside a
checkout.

Example:
    >>> from agentmem.evaluation import golden_dataset_path, load_dataset
    >>> len(load_dataset(golden_dataset_path()).cases) > 100
    True
"""

from __future__ import annotations

import os
from pathlib import Path

_DATA = Path(__file__).with_name("data")
#: Name -> file of each bundled dataset.
BUNDLED_DATASETS = {"golden": "memory_golden_dataset.json", "calibration": "calibration_cases.json"}


def golden_dataset_path() -> Path:
    """The installed copy of the golden dataset (``agentmem eval --dataset golden``)."""
    return _DATA / BUNDLED_DATASETS["golden"]


def dataset_path(name_or_path: str | os.PathLike[str]) -> Path:
    """A bundled dataset's name (``"golden"``) as its installed file; anything else as a path.

    A name always means the bundled dataset; write ``./golden`` for a file of that name.
    """
    if isinstance(name_or_path, str) and name_or_path in BUNDLED_DATASETS:
        return _DATA / BUNDLED_DATASETS[name_or_path]
    return Path(name_or_path)


__all__ = ["BUNDLED_DATASETS", "dataset_path", "golden_dataset_path"]

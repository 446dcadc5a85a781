"""``calibrate``: fit a calibration profile for the store's embedder and use it from now on.

The labelled cases are written into a scratch store (never this one) with this store's
embedder, recall's candidates are collected and labelled, a profile is fitted on them
(:func:`agentmem.calibration.fit.fit_profile`) and saved in this store's records, where every
later open (another process, a server restarted, each node of a cluster) finds it; this open
scores with it from the next recall on.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

from ..calibration import source
from ..calibration.fit import CalibrationReport, Labelled, fit_profile
from ..calibration.profile import EmbedderIdentity
from ..context import StoreContext
from ..distribution import installed_version
from ..errors import ValidationError


def calibrate(
    ctx: StoreContext,
    queries: Sequence[Labelled] | None = None,
    *,
    fitted_on: str = "",
    folds: int = 5,
    progress: source.Progress | None = None,
) -> CalibrationReport:
    """Fit a profile for ``ctx``'s embedder, save it and score with it.

    Args:
        ctx: The store.
        queries: Labelled candidates collected with this store's embedder; default the
            labelled data shipped with agentmem (:func:`agentmem.calibration.source.shipped`).
        fitted_on: What ``queries`` are (kept in the profile).
        folds: Folds of the held-out figures (2 or more).
        progress: ``progress(done, total)``: sets of the shipped cases collected so far.

    Raises:
        ValidationError: fewer than 2 folds (refused before minutes of collecting cases).
        ValueError: no case has a relevant candidate.
        StorageError: the store is open read-only.
    """
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise ValidationError("folds", f"must be a whole number of at least 2, got {folds!r}")
    ctx.check_open()
    started = time.perf_counter()
    labelled = (
        source.shipped(ctx.embedder, progress)
        if queries is None
        else source.LabelledSet(queries, fitted_on or "labelled cases")
    )
    report = fit_profile(
        labelled.cases,
        EmbedderIdentity.of(ctx.embedder),
        fitted_on=labelled.described,
        version=installed_version() or "",
        folds=folds,
        score_families=labelled.score_families,
    )
    ctx.use_profile(report.profile)
    return dataclasses.replace(report, seconds=round(time.perf_counter() - started, 1))

"""Where a store's calibration profile lives, and which one an open store scores with.

A profile fitted for a store (``agentmem calibrate``) is kept in the records store's ``meta``
table under :data:`META_KEY`, beside the embedder fingerprint: in SQLite in the data dir, or
in Postgres when the records are shared, so every node of a cluster reads the same profile
(each loads it when it opens the store).

At open (:func:`select`), the store scores with, in this order:

1. its own profile, when it was fitted for the embedder it is opened with and fits the
   features this version computes;
2. else the profile agentmem ships for that model (the bundled MiniLM's, e5's);
3. else none: the rank-based fallback (:data:`~agentmem.recall.ranking.UNCALIBRATED`), with
   one :class:`~agentmem.calibration.profile.UncalibratedEmbedderWarning` naming
   ``agentmem calibrate``. Never another model's weights.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..embedding_adapters import known_dimensions
from ..embeddings import Embedder
from ..errors import StorageError, ValidationError
from ..recall.ranking import UNCALIBRATED, Scoring
from ..storage.records import RecordStore
from .profile import CalibrationProfile, bundled_profile

log = logging.getLogger("agentmem")

#: Key of the store's own profile in the records store's ``meta`` table.
META_KEY = "calibration_profile"


@dataclass(frozen=True)
class Selected:
    """The scoring an open store uses, the profile it comes from and why.

    Attributes:
        scoring: What recall scores with.
        profile: Its profile; None for the fallback.
        source: ``"store"`` (fitted for this store), ``"bundled"`` (shipped with agentmem)
            or ``"none"``.
        warning: Why the store is uncalibrated (None when it is not): said once, at open.
        problem: Why the store's own profile could not be read, with the fix (None when it
            could): the store scores as if it had none, and ``doctor`` reports it.
    """

    scoring: Scoring
    profile: CalibrationProfile | None
    source: str
    warning: str | None = None
    problem: str | None = None


def saved(records: RecordStore) -> CalibrationProfile | None:
    """The profile fitted for this store, or None.

    Raises:
        StorageError: the stored profile cannot be read.
    """
    raw = records.meta.get(META_KEY)
    if raw is None:
        return None
    try:
        return CalibrationProfile.from_json(raw)
    except ValidationError as exc:
        raise StorageError(f"unreadable calibration profile in the records store: {exc}") from exc


def save(records: RecordStore, profile: CalibrationProfile) -> None:
    """Keep ``profile`` as this store's own (replacing an earlier one)."""
    records.meta.set(META_KEY, profile.to_json())


def select(records: RecordStore, embedder: Embedder) -> Selected:
    """The scoring of a store opened with ``embedder`` (see the module docstring)."""
    name, dims = str(embedder.model_name), known_dimensions(embedder)
    notes = []
    unreadable = None
    try:
        own = saved(records)
    except StorageError as exc:
        # A damaged profile is derived data, refitted in minutes: refusing the open would
        # also refuse `doctor` and `calibrate`, the commands that report and repair it.
        own = None
        unreadable = f"{exc}; run `agentmem calibrate` to fit it again"
        log.warning("%s (scoring as if the store had none until then)", unreadable)
    if own is not None and own.embedder.names(name, dims):
        problem = own.problem()
        if problem is None:
            return Selected(own.scoring(), own, "store")
        notes.append(
            f"the profile fitted for this store ({own.fitted_at}) is out of date: {problem}"
        )
    elif own is not None:  # a switch of embedders drops it; a leftover is never applied
        log.warning(
            "ignoring the calibration profile of %s: this store is opened with %r",
            own.embedder.describe(),
            name,
        )
    shipped = bundled_profile(name, dims)
    if shipped is not None:
        problem = shipped.problem()
        if problem is None:
            return Selected(shipped.scoring(), shipped, "bundled", problem=unreadable)
        notes.append(f"the profile agentmem ships for it does not fit this version: {problem}")
    if not notes:
        notes.append("it has no calibration profile")
    warning = (
        f"embedder {name!r}: {'; '.join(notes)}. Recall scores are rank-based "
        "and min_score applies to keyword evidence only (an unrelated query returns nothing, "
        "a paraphrase without a shared word returns nothing either) until you run "
        "`agentmem calibrate` (AgentMemory.calibrate()), which fits a profile for it in "
        "minutes"
    )
    return Selected(UNCALIBRATED, None, "none", warning, unreadable)


def drop(records: RecordStore) -> None:
    """Forget this store's own profile (its embedder is being replaced)."""
    records.meta.delete(META_KEY)


__all__ = ["META_KEY", "Selected", "drop", "save", "saved", "select"]

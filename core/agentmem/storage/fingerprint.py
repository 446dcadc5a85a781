"""Which embedder made a data dir's vectors, and the check that keeps other embedders out.

Vectors of different models do not mix: a 256-d collection queried with a 384-d vector fails,
and two models of the same width return nonsense neighbours without any error. So the records
store keeps the embedder's fingerprint (its ``model_name`` and ``dimensions``) in its ``meta``
table under :data:`META_KEY`, and :class:`~agentmem.AgentMemory` compares it with its own
embedder when it opens a data dir (:func:`check`).

When is it recorded (``origin``)?

- ``first_write``: by the indexer, just before the first vectors are written (a data dir that
  never embedded anything opens with any embedder);
- ``reindex``: when every vector is dropped to be re-embedded (``agentmem reindex
  --embeddings``, ``reindex()``, or opening with ``allow_embedder_change=True`` and another
  embedder);
- ``assumed``: a data dir written before fingerprints existed that already holds vectors.
  Their model cannot be known; the width of a stored vector is compared with the embedder's
  (another width is refused), and otherwise the current embedder is recorded and
  ``agentmem doctor`` says it was assumed. ``reindex`` replaces the guess with a fact.

Switching embedders (:func:`check` with ``allow_change``) drops every vector first, then, in
one transaction, queues every row to be embedded again, records the new embedder, forgets
what belonged to the old one (its calibration profile) and leaves a :class:`Switch` under
:data:`SWITCH_KEY`: the re-embedding under way, which ``agentmem reindex --embeddings`` runs
to the end (resuming where an interrupted run stopped: the rows' own flags say which are
done) and then clears. From the first step on, the data dir holds vectors of the new model
only.

Example:
    >>> fp = EmbedderFingerprint.of(default_embedder(), origin="first_write")  # doctest: +SKIP
    >>> fp.describe()  # doctest: +SKIP
    "'all-MiniLM-L6-v2-int8' (384-d)"
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..embedding_adapters import BUILTIN_SPECS, known_dimensions
from ..embeddings import Embedder
from ..errors import EmbedderMismatchError, StorageError
from .records import RecordStore
from .rows import now_utc
from .vector_index import VectorIndex

log = logging.getLogger("agentmem")

#: Key of the fingerprint in the records store's ``meta`` table.
META_KEY = "embedder"
#: Key of the re-embedding under way (a :class:`Switch`) in the ``meta`` table.
SWITCH_KEY = "embedder_switch"
#: Ways a fingerprint came to be recorded (see the module docstring).
ORIGINS = ("first_write", "reindex", "assumed")


@dataclass(frozen=True)
class EmbedderFingerprint:
    """An embedder's identity as far as its vectors are concerned.

    Attributes:
        model_name: The embedder's :attr:`~agentmem.embeddings.Embedder.model_name`.
        dimensions: The length of its vectors.
        origin: How it was recorded: ``first_write``, ``reindex`` or ``assumed``.
    """

    model_name: str
    dimensions: int
    origin: str = "first_write"

    @classmethod
    def of(cls, embedder: Embedder, *, origin: str) -> EmbedderFingerprint:
        """The fingerprint of ``embedder``."""
        return cls(str(embedder.model_name), int(embedder.dimensions), origin)

    def matches(self, other: EmbedderFingerprint) -> bool:
        """True if both name the same model of the same width (``origin`` is ignored)."""
        return (self.model_name, self.dimensions) == (other.model_name, other.dimensions)

    def describe(self) -> str:
        """``'model-name' (384-d)``."""
        width = f"{self.dimensions}-d" if self.dimensions else "width not known yet"
        return f"{self.model_name!r} ({width})"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str) -> EmbedderFingerprint:
        data = json.loads(raw)
        return cls(str(data["model_name"]), int(data["dimensions"]), str(data.get("origin", "")))


@dataclass(frozen=True)
class Switch:
    """A re-embedding of every row under way (``agentmem reindex --embeddings``).

    Attributes:
        source: The embedder whose vectors were dropped (None: a data dir re-embedded with
            the model it had, or whose model was never recorded).
        target: The embedder every row is being embedded with.
        started_at: When, ISO 8601.
        total: Rows queued for embedding when it started.
    """

    source: EmbedderFingerprint | None
    target: EmbedderFingerprint
    started_at: str
    total: int

    def to_json(self) -> str:
        return json.dumps(
            {
                "source": None if self.source is None else self.source.to_dict(),
                "target": self.target.to_dict(),
                "started_at": self.started_at,
                "total": self.total,
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, raw: str) -> Switch:
        data = json.loads(raw)
        src = data.get("source")
        return cls(
            None if src is None else EmbedderFingerprint.from_json(json.dumps(src)),
            EmbedderFingerprint.from_json(json.dumps(data["target"])),
            str(data["started_at"]),
            int(data["total"]),
        )


def read_switch(records: RecordStore) -> Switch | None:
    """The re-embedding under way in a records store, or None."""
    raw = records.meta.get(SWITCH_KEY)
    if raw is None:
        return None
    try:
        return Switch.from_json(raw)
    except (ValueError, KeyError, TypeError) as exc:
        raise StorageError(f"unreadable embedder switch {raw!r}: {exc}") from exc


def start_switch(
    records: RecordStore,
    source: EmbedderFingerprint | None,
    target: EmbedderFingerprint,
    *,
    forget: Sequence[str] = (),
) -> Switch:
    """After every vector was dropped: queue every row, record ``target``, forget the meta
    keys of ``forget`` (what belonged to the old embedder) and leave the :class:`Switch`,
    in one transaction."""
    switch = Switch(source, target, now_utc().isoformat(timespec="seconds"), 0)
    meta: dict[str, str | None] = dict.fromkeys(forget)
    meta[META_KEY] = target.to_json()
    meta[SWITCH_KEY] = switch.to_json()
    records.partitions.requeue_vectors(meta=meta)
    # the count, for progress, once the rows are queued (a crash before it leaves 0: the
    # resumed run then counts what is left)
    switch = Switch(source, target, switch.started_at, records.index.pending_counts()[1])
    records.meta.set(SWITCH_KEY, switch.to_json())
    return switch


def finish_switch(records: RecordStore) -> None:
    """Every row is embedded with the new embedder: the switch is over."""
    records.meta.delete(SWITCH_KEY)


#: Stands for the model of vectors written before fingerprints existed.
UNKNOWN_MODEL = "unknown model (not recorded)"


def mismatch_error(
    home: Path, recorded: EmbedderFingerprint, current: EmbedderFingerprint
) -> EmbedderMismatchError:
    """The error for opening ``home`` (vectors by ``recorded``) with ``current``."""
    # a command that only reads (stats, doctor, export) needs the flag, not a re-embedding
    spec = BUILTIN_SPECS.get(recorded.model_name)
    made = f" (`--embedder {spec}`)" if spec else ""
    return EmbedderMismatchError(
        f"data dir {home} holds vectors made by embedder {recorded.describe()}, but it was "
        f"opened with {current.describe()}; vectors of different models do not mix, so "
        f"nothing was opened or changed. Open it with the embedder that made it{made}, or "
        f"re-embed every record with the new one: `agentmem reindex --embeddings` (here: `agentmem "
        f"--home {home} --embedder SPEC reindex --embeddings`, resumable; from Python: "
        f"`AgentMemory(path, embedder=..., allow_embedder_change=True)"
        f".reindex(embeddings=True)`)",
        recorded=recorded,
        current=current,
        path=str(home),
        recorded_model=recorded.model_name,
        recorded_dimensions=recorded.dimensions,
        model=current.model_name,
        dimensions=current.dimensions,
    )


def read(records: RecordStore) -> EmbedderFingerprint | None:
    """The fingerprint recorded in a :class:`~agentmem.storage.records.RecordStore`, or None."""
    raw = records.meta.get(META_KEY)
    if raw is None:
        return None
    try:
        return EmbedderFingerprint.from_json(raw)
    except (ValueError, KeyError, TypeError) as exc:
        raise StorageError(f"unreadable embedder fingerprint {raw!r}: {exc}") from exc


def record(records: RecordStore, fingerprint: EmbedderFingerprint, *, replace: bool) -> None:
    """Store ``fingerprint``; with ``replace=False`` an existing one is kept."""
    records.meta.set(META_KEY, fingerprint.to_json(), replace=replace)


def check(
    records: RecordStore,
    vectors: VectorIndex,
    embedder: Embedder,
    home: Path,
    *,
    allow_change: bool,
    drop_vectors: Callable[[], None],
    forget: Sequence[str] = (),
) -> tuple[bool, EmbedderFingerprint | None]:
    """Compare the embedder recorded for a data dir with ``embedder``, at open; with
    ``allow_change``, another embedder starts a :class:`Switch` to it (``forget``: meta keys
    of what belonged to the old one).

    Returns:
        (whether a fingerprint is recorded now, the fingerprint whose vectors were dropped
        because ``allow_change`` let another embedder in, or None).

    Raises:
        EmbedderMismatchError: They differ and ``allow_change`` is False (nothing changed).
    """
    recorded = read(records) or _legacy(records, vectors, embedder, home)
    if recorded is None:
        return False, None  # no vectors yet: the indexer records ours with the first ones
    if differs(recorded, embedder) is None:
        return True, None
    if not allow_change:
        raise mismatch_error(home, recorded, differs(recorded, embedder) or recorded)
    current = EmbedderFingerprint.of(embedder, origin="reindex")  # may embed, to learn width
    log.warning(
        "data dir %s: embedder changed from %s to %s; dropping its vectors, every row "
        "will be embedded again",
        home,
        recorded.describe(),
        current.describe(),
    )
    drop_vectors()
    start_switch(records, recorded, current, forget=forget)
    return True, recorded


def differs(recorded: EmbedderFingerprint, embedder: Embedder) -> EmbedderFingerprint | None:
    """None when ``embedder`` is the model of ``recorded``'s vectors, else its fingerprint
    (to name it). An embedder that learns its width on first use (a remote one) is compared
    by name, without a call: its first vector's width is checked when it comes."""
    width = known_dimensions(embedder)
    current = EmbedderFingerprint(str(embedder.model_name), width or 0, "reindex")
    if width is None and current.model_name == recorded.model_name:
        return None
    return None if recorded.matches(current) else current


def _legacy(
    records: RecordStore, vectors: VectorIndex, embedder: Embedder, home: Path
) -> EmbedderFingerprint | None:
    """The embedder of a data dir from before fingerprints, if it holds vectors.

    Their model cannot be known. A stored vector of another width than the embedder's is a
    certain mismatch (returned with an unknown model name, so the open is refused without
    recording anything); otherwise the embedder is recorded as ``assumed`` (``agentmem
    doctor`` says so; ``reindex`` makes it certain).
    """
    names = [collection for _, _, collection in records.partitions.all()]
    if not names:
        return None  # nothing was ever embedded
    ours = EmbedderFingerprint.of(embedder, origin="assumed")
    try:
        width = vectors.stored_dimensions(names)
    except StorageError as exc:  # cannot look: record ours, as for a readable index
        log.warning("data dir %s: cannot read a stored vector: %s", home, exc)
        width = ours.dimensions
    if width is None:
        return None  # no vector left: the first new one records the embedder
    if width != ours.dimensions:
        return EmbedderFingerprint(UNKNOWN_MODEL, width, "assumed")
    log.warning(
        "data dir %s predates embedder fingerprints; assuming its vectors were made by %s "
        "(run `agentmem reindex` to be sure)",
        home,
        ours.describe(),
    )
    record(records, ours, replace=False)
    return ours


__all__ = [
    "META_KEY",
    "ORIGINS",
    "SWITCH_KEY",
    "UNKNOWN_MODEL",
    "EmbedderFingerprint",
    "Switch",
    "check",
    "differs",
    "finish_switch",
    "mismatch_error",
    "read",
    "read_switch",
    "record",
    "start_switch",
]

"""Recall's scored candidates for every case of a family, labelled: what ranking and calibration
weights are fitted on, offline, without running recall again.

For each case, :meth:`~agentmem.recall.engine.RecallEngine.candidates` runs as recall runs it
(both retrievers, the case's identity, scope and filters, the store's configuration), with
nothing cut: ``min_score`` 0, no token budget, no reranker. Every admitted candidate, in the
engine's order (best first), becomes a row of a :class:`LabelledQuery`: its feature vector
(:data:`agentmem.recall.ranking.FEATURE_NAMES`), the calibrated score recall gave it, its kind,
its token count, the evidence units it carries and whether it is relevant (carries one of
the case's units). The query keeps its family, its group (a conversation, or the case) and
its expect-empty flag, so a fit can leave a family or a conversation out.

Example:
    >>> from agentmem.evaluation.suite import collect_suite, save_candidates
    >>> queries = collect_suite(["paraphrase", "identifiers"])  # doctest: +SKIP
    >>> q = queries[0]  # doctest: +SKIP
    >>> q.features.shape, q.labels.sum(), q.family  # doctest: +SKIP
    ((37, 13), 1.0, 'paraphrase')
    >>> save_candidates("candidates.jsonl.gz", queries)  # doctest: +SKIP

The pool recall draws from is ``MemoryConfig.candidates`` per list: pass a config with a
larger pool to fit on more negatives than recall sees.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...config import MemoryConfig
from ...embeddings import Embedder
from ...memory import AgentMemory
from ...recall.ranking import FEATURE_NAMES, unknown_code
from ...recall.request import RecallRequest
from ...tokens import count_tokens
from ..halves import uncut_request
from .cases import SuiteCase, WrittenFamily
from .families import VALIDATION_FAMILIES
from .stores import family_stores, golden_store, locomo_store, plan, run_embedder

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
#: Version of :func:`save_candidates`' format.
FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True, eq=False)
class LabelledQuery:
    """One case's candidates with their features and labels (row ``i`` of every array is the
    ``i``-th candidate, in the engine's order).

    Attributes:
        family: The task family (``paraphrase``, ``locomo``, ...; a golden file's name).
        case_id: The case's id (LoCoMo: ``<sample_id>:q<index>``).
        group: What a validation leaves out together: the conversation, or the case.
        query: The question.
        expect_empty: Nothing is relevant; recall at defaults should return nothing.
        evidence: The evidence units a relevant candidate carries (sorted).
        tags: The case's labels (LoCoMo: its category name).
        features: ``(n, len(FEATURE_NAMES))`` feature vectors.
        scores: ``(n,)`` calibrated scores, as recall computed them.
        labels: ``(n,)`` 1.0 for a relevant candidate, else 0.0.
        kinds: Each candidate's kind (``memory``, ``chat_message``, ...).
        units: The evidence units each candidate carries (relevant or not: a turn id, the
            content of the memory that wrote it, passages).
        tokens: ``(n,)`` each candidate's content tokens (to simulate the token budget).
        unknown_code: The query gives a code none of its candidates says
            (:func:`agentmem.recall.ranking.unknown_code`: recall returns nothing).
        asks: Whether each candidate is a chat message asking a question
            (:func:`agentmem.phrasing.asks`; the score gap is not measured from one).
            Empty in files written before it was recorded: no candidate asks.
    """

    family: str
    case_id: str
    group: str
    query: str
    expect_empty: bool
    evidence: tuple[str, ...]
    tags: tuple[str, ...]
    features: FloatArray
    scores: FloatArray
    labels: FloatArray
    kinds: tuple[str, ...]
    units: tuple[tuple[str, ...], ...]
    tokens: IntArray
    unknown_code: bool = False
    asks: tuple[bool, ...] = ()

    def __len__(self) -> int:
        return len(self.kinds)

    @property
    def ceiling(self) -> float | None:
        """Share of the evidence among the candidates at all: what no ordering can exceed
        (None for an expect-empty case)."""
        if not self.evidence:
            return None
        found = {u for units in self.units for u in units}
        return len(found.intersection(self.evidence)) / len(self.evidence)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (see :func:`save_candidates`)."""
        return {
            "family": self.family,
            "case_id": self.case_id,
            "group": self.group,
            "query": self.query,
            "expect_empty": self.expect_empty,
            "evidence": list(self.evidence),
            "tags": list(self.tags),
            "features": [[round(float(v), 6) for v in row] for row in self.features],
            "scores": [round(float(v), 6) for v in self.scores],
            "labels": [int(v) for v in self.labels],
            "kinds": list(self.kinds),
            "units": [list(u) for u in self.units],
            "tokens": [int(v) for v in self.tokens],
            "unknown_code": self.unknown_code,
            "asks": [int(a) for a in self.asks],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LabelledQuery:
        """The inverse of :meth:`to_dict`."""
        width = len(FEATURE_NAMES)
        return cls(
            family=data["family"],
            case_id=data["case_id"],
            group=data["group"],
            query=data["query"],
            expect_empty=bool(data["expect_empty"]),
            evidence=tuple(data["evidence"]),
            tags=tuple(data["tags"]),
            features=np.asarray(data["features"], dtype=np.float64).reshape(-1, width),
            scores=np.asarray(data["scores"], dtype=np.float64),
            labels=np.asarray(data["labels"], dtype=np.float64),
            kinds=tuple(data["kinds"]),
            units=tuple(tuple(u) for u in data["units"]),
            tokens=np.asarray(data["tokens"], dtype=np.int64),
            unknown_code=bool(data.get("unknown_code", False)),
            asks=tuple(bool(a) for a in data.get("asks", ())),
        )


def candidate_request(case: SuiteCase) -> RecallRequest:
    """The request whose candidates are collected for ``case``: as recall asks it, with no
    cut-off (``min_score`` 0, no budget, no reranker)."""
    return uncut_request(
        case.query, scope=case.scope, kinds=case.kinds, memory_types=case.memory_types
    )


def collect_case(mem: AgentMemory, family: WrittenFamily, case: SuiteCase) -> LabelledQuery:
    """One case's labelled candidates (read-only)."""
    ranked, visible, _ = mem.engine.candidates(case.identity, candidate_request(case))
    rows = [visible[c.id][1] for c in ranked]
    units = tuple(family.units(r.id, r.content, r.metadata) for r in rows)
    return LabelledQuery(
        family=case.family,
        case_id=case.id,
        group=case.group,
        query=case.query,
        expect_empty=case.expect_empty,
        evidence=tuple(sorted(case.evidence)),
        tags=case.tags,
        features=np.array([c.features for c in ranked], dtype=np.float64).reshape(
            -1, len(FEATURE_NAMES)
        ),
        scores=np.array([c.score for c in ranked], dtype=np.float64),
        labels=np.array([1.0 if case.evidence.intersection(u) else 0.0 for u in units]),
        kinds=tuple(r.kind for r in rows),
        units=units,
        tokens=np.array(
            [
                r.content_tokens if r.content_tokens is not None else count_tokens(r.content)
                for r in rows
            ],
            dtype=np.int64,
        ),
        unknown_code=unknown_code(ranked),
        asks=tuple(c.asks for c in ranked),
    )


def collect(mem: AgentMemory, family: WrittenFamily) -> list[LabelledQuery]:
    """Every case of a written family, labelled."""
    return [collect_case(mem, family, case) for case in family.cases]


def collect_golden(
    path: str | os.PathLike[str],
    *,
    embedder: Embedder | None = None,
    config: MemoryConfig | None = None,
) -> list[LabelledQuery]:
    """A golden-format file's cases, each in a store of its own as ``agentmem eval
    --dataset`` runs them (the golden set, ``the bundled ``calibration`` cases``)."""
    with golden_store(path, embedder=embedder, config=config) as (mem, family):
        return collect(mem, family)


def collect_locomo(
    path: str | os.PathLike[str],
    *,
    embedder: Embedder | None = None,
    config: MemoryConfig | None = None,
    empty: bool = False,
) -> list[LabelledQuery]:
    """Every scored question of a LoCoMo file (scope ``history``), and with ``empty`` the
    suite's expect-empty questions for each conversation."""
    with locomo_store(path, embedder=embedder, config=config, empty=empty) as (mem, family):
        return collect(mem, family)


def collect_suite(
    families: Sequence[str] | None = None,
    *,
    locomo: str | os.PathLike[str] | None = None,
    directory: str | os.PathLike[str] | None = None,
    embedder: Embedder | None = None,
    config: MemoryConfig | None = None,
    embed_cache: str | os.PathLike[str] | None = None,
) -> list[LabelledQuery]:
    """The labelled candidates of every case of the suite's families (default: all whose
    data is there but the validation families, never fitted on; ``locomo`` only with a
    LoCoMo file), each family in a store of its own.

    Args:
        families: Family names (:data:`~agentmem.evaluation.suite.FAMILIES`); a family of
            :data:`~agentmem.evaluation.suite.VALIDATION_FAMILIES` only when named here.
        locomo: A LoCoMo file, read where it lies.
        directory: Family files (default: the bundled ones).
        embedder: Default: the packaged model.
        config: Store configuration (its ``candidates`` is the pool per list).
        embed_cache: Keep vectors on disk here (as ``agentmem eval --embed-cache``).
    """
    if families is None:
        runnable, _ = plan(None, locomo=locomo, directory=directory)
        families = [f for f in runnable if f not in VALIDATION_FAMILIES]
    out: list[LabelledQuery] = []
    with run_embedder(embedder, embed_cache) as (shared, _):
        for _, (mem, family) in family_stores(
            families, locomo=locomo, directory=directory, embedder=shared, config=config
        ):
            out.extend(collect(mem, family))
    return out


def save_candidates(path: str | os.PathLike[str], queries: Iterable[LabelledQuery]) -> Path:
    """Write labelled queries as JSON lines (gzip when ``path`` ends in ``.gz``), after a
    header line naming the format and the feature names."""
    p = Path(path)
    header: dict[str, Any] = {
        "format": "agentmem-candidates",
        "version": FORMAT_VERSION,
        "features": list(FEATURE_NAMES),
    }
    opener: Any = gzip.open if p.suffix == ".gz" else open
    with opener(p, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps(header) + "\n")
        for q in queries:
            fh.write(json.dumps(q.to_dict()) + "\n")
    return p


def load_candidates(path: str | os.PathLike[str]) -> list[LabelledQuery]:
    """Read what :func:`save_candidates` wrote; refuses a file of other feature names."""
    p = Path(path)
    opener: Any = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8") as fh:
        header = json.loads(fh.readline() or "{}")
        if header.get("format") != "agentmem-candidates":
            raise ValueError(f"{p} is not a candidates file")
        if header.get("features") != list(FEATURE_NAMES):
            raise ValueError(
                f"{p} holds features {header.get('features')}, this agentmem has "
                f"{list(FEATURE_NAMES)}: collect them again"
            )
        return [LabelledQuery.from_dict(json.loads(line)) for line in fh if line.strip()]


__all__ = [
    "FORMAT_VERSION",
    "LabelledQuery",
    "candidate_request",
    "collect",
    "collect_case",
    "collect_golden",
    "collect_locomo",
    "collect_suite",
    "load_candidates",
    "save_candidates",
]

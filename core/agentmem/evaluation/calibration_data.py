"""The labelled data :meth:`agentmem.AgentMemory.calibrate` fits on: the golden set shipped
with agentmem, written into a scratch store with the embedder being calibrated, every case's
candidates collected before any cut-off and labelled (registered with
:mod:`agentmem.calibration.source` when this module is imported).

Example:
    >>> queries, described = collect_shipped(default_embedder())  # doctest: +SKIP
    >>> described  # doctest: +SKIP
    'golden (125 cases)'
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..calibration import source
from ..calibration.profile import UncalibratedEmbedderWarning
from ..config import MAX_TOP_K, MemoryConfig
from ..embeddings import Embedder
from ..memory import AgentMemory
from ..recall.ranking import FEATURE_NAMES, UNCALIBRATED
from ..recall.request import RecallRequest
from ..tokens import count_tokens
from .datasets import golden_dataset_path
from .golden import bind_case, load_dataset, write_case


@dataclass(frozen=True, eq=False)
class LabelledCase:
    """One case's candidates and labels (see :class:`agentmem.calibration.fit.Labelled`)."""

    family: str
    group: str
    expect_empty: bool
    evidence: tuple[str, ...]
    features: npt.NDArray[np.float64]
    labels: npt.NDArray[np.float64]
    kinds: tuple[str, ...]
    units: tuple[tuple[str, ...], ...]
    tokens: npt.NDArray[np.int64]


def collect_golden_file(
    path: str,
    embedder: Embedder,
    progress: Callable[[int, int], None] | None = None,
    *,
    family: str = "golden",
) -> list[LabelledCase]:
    """Every case of a golden-format file in one scratch store, its candidates labelled."""
    dataset = load_dataset(path)
    out = []
    with warnings.catch_warnings():
        # the embedder being calibrated has no profile yet: said once, by its own store
        warnings.simplefilter("ignore", UncalibratedEmbedderWarning)
        scratch = AgentMemory(
            tempfile.mkdtemp(prefix="agentmem-calibrate-"),
            embedder=embedder,
            background=False,
            config=MemoryConfig(),
        )
    with scratch as mem:
        owners: dict[str, str] = {}
        for n, case in enumerate(dataset.cases):
            owners.update({i: m.content for i, m in write_case(mem, n, case).items()})
        mem.flush()
        for n, case in enumerate(dataset.cases):
            req = RecallRequest(
                query=case.query,
                top_k=MAX_TOP_K,
                scope=case.scope,
                kinds=case.kinds,
                memory_types=case.types,
                rerank=False,
                min_score=0.0,
                token_budget=10**9,
                filters={},
            )
            bound = bind_case(mem, n, case)
            # features do not depend on the weights: score with none
            ranked, visible, _ = mem.engine.candidates(bound.identity, req, scoring=UNCALIBRATED)
            rows = [visible[c.id][1] for c in ranked]
            units = tuple((owners.get(r.id, r.content),) for r in rows)
            expected = set(case.expected)
            out.append(
                LabelledCase(
                    family=family,
                    group=case.id,
                    expect_empty=case.expect_empty,
                    evidence=tuple(sorted(expected)),
                    features=np.array([c.features for c in ranked], float).reshape(
                        -1, len(FEATURE_NAMES)
                    ),
                    labels=np.array([1.0 if expected & set(u) else 0.0 for u in units]),
                    kinds=tuple(r.kind for r in rows),
                    units=units,
                    tokens=np.array([count_tokens(r.content) for r in rows], dtype=np.int64),
                )
            )
            if progress is not None:
                progress(n + 1, len(dataset.cases))
    shutil.rmtree(mem.home, ignore_errors=True)
    return out


def collect_shipped(
    embedder: Embedder, progress: Callable[[int, int], None] | None = None
) -> tuple[Sequence[LabelledCase], str]:
    """The shipped labelled data's candidates with ``embedder``, and what it is."""
    cases = collect_golden_file(str(golden_dataset_path()), embedder, progress)
    return cases, f"golden ({len(cases)} cases)"


source.register(collect_shipped)

__all__ = ["LabelledCase", "collect_golden_file", "collect_shipped"]

"""The labelled data :meth:`agentmem.AgentMemory.calibrate` fits on, collected with the embedder
being calibrated (registered with :mod:`agentmem.calibration.source` when this module is
imported):

- the **score sets** (:data:`SCORE_SETS`): the golden set and the calibration cases, both
  package data. Their stores hold what a user's store holds (facts, preferences, chat turns,
  tool outputs, documents, unrelated queries), so the calibrated score, a probability of
  relevance, is fitted on them and means the same thing in a user's store;
- the **suite's task families** (all but the validation ones,
  :data:`~agentmem.evaluation.suite.VALIDATION_FAMILIES`): implicit recall, paraphrase-only
  facts, identifiers, tool outputs, documents, temporal questions. The ordering is fitted on
  them with the score sets, every family weighing alike. They are not fitted for the score:
  a long conversation's hundreds of unrelated turns would make every probability small.

Each set is written into a scratch store of its own (never the store being calibrated), and
every case's candidates are collected before any cut-off and labelled
(:func:`agentmem.evaluation.suite.collect`).

Example:
    >>> labelled = collect_shipped(default_embedder())  # doctest: +SKIP
    >>> labelled.described  # doctest: +SKIP
    'golden + calibration (scores); implicit, paraphrase, ... (ordering): 725 cases'
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Callable

from ..calibration import source
from ..calibration.profile import UncalibratedEmbedderWarning
from ..config import MemoryConfig
from ..embeddings import Embedder
from .datasets import dataset_path
from .suite import VALIDATION_FAMILIES, LabelledQuery, collect_golden, collect_suite
from .suite.stores import plan

#: The bundled golden-format datasets the calibrated score is fitted on.
SCORE_SETS = ("golden", "calibration")


def ordering_families(directory: str | os.PathLike[str] | None = None) -> list[str]:
    """The suite's families calibrate fits the ordering on: every one whose file is in
    ``directory`` (default: the bundled ones) but the validation families."""
    runnable, _ = plan(None, directory=directory)
    return [f for f in runnable if f not in VALIDATION_FAMILIES]


def collect_shipped(
    embedder: Embedder,
    progress: Callable[[int, int], None] | None = None,
    *,
    directory: str | os.PathLike[str] | None = None,
) -> source.LabelledSet:
    """The shipped labelled data's candidates with ``embedder`` (see the module docstring);
    ``directory`` holds the suite's family files instead of the bundled ones."""
    families = ordering_families(directory)
    steps = len(SCORE_SETS) + len(families)
    config = MemoryConfig()  # the defaults, whatever the environment says
    cases: list[LabelledQuery] = []
    with warnings.catch_warnings():
        # the embedder being calibrated has no profile yet: said once, by its own store
        warnings.simplefilter("ignore", UncalibratedEmbedderWarning)
        for n, name in enumerate(SCORE_SETS):
            collected = collect_golden(dataset_path(name), embedder=embedder, config=config)
            cases.extend(dataclasses.replace(q, family=name) for q in collected)
            if progress is not None:
                progress(n + 1, steps)
        for n, name in enumerate(families, start=len(SCORE_SETS) + 1):
            cases.extend(
                collect_suite([name], directory=directory, embedder=embedder, config=config)
            )
            if progress is not None:
                progress(n, steps)
    return source.LabelledSet(
        cases=cases,
        described=f"{' + '.join(SCORE_SETS)} (scores); {', '.join(families)} (ordering): "
        f"{len(cases)} cases",
        score_families=frozenset(SCORE_SETS),
    )


source.register(collect_shipped)

__all__ = ["SCORE_SETS", "collect_shipped", "ordering_families"]

"""A fresh store per family: which families can run, and each written, settled and ready.

Every family gets a temporary data dir of its own (removed afterwards), with one shared
embedder for the run (behind an on-disk cache with ``embed_cache``). Once written, a store is
*settled* (:func:`settle`): both indexes caught up, then the keyword index rewritten in one
commit, so that every run of the same data scores the same.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from ...config import MemoryConfig
from ...embeddings import Embedder, default_embedder
from ...errors import ValidationError
from ...memory import AgentMemory
from ...storage.embedding_cache import DiskEmbeddingCache, cached_on_disk
from ..golden.dataset import load_dataset
from ..locomo.data import load_locomo
from .cases import WrittenFamily
from .families import FAMILIES, family_path, load_family, write_family
from .golden_family import write_golden_isolated
from .locomo_family import LOCOMO_EMPTY_FILE, load_locomo_empty, write_locomo

Opened = tuple[AgentMemory, WrittenFamily]


def settle(mem: AgentMemory) -> None:
    """Wait for both indexes, then rewrite the keyword index in one commit.

    The live keyword index replaces a chat message's entry when its context changes, and a
    replaced entry still counts in the index's term statistics until a background merge
    drops it, whenever that happens: BM25, IDF and the features built on them (and so the
    order of candidates) then differ from one run of the same data to the next (50 of 179
    cases of three families changed order between two runs). The rewritten index is the
    fully merged one, the same every time.
    """
    mem.flush()
    mem.reindex(keywords_only=True)


@contextlib.contextmanager
def fresh_store(
    embedder: Embedder | None = None, config: MemoryConfig | None = None
) -> Iterator[AgentMemory]:
    """A store on a new temporary directory, removed on exit."""
    with (
        tempfile.TemporaryDirectory(prefix="agentmem-suite-") as tmp,
        AgentMemory(tmp, embedder=embedder, config=config) as mem,
    ):
        yield mem


@contextlib.contextmanager
def golden_store(
    path: str | os.PathLike[str],
    *,
    embedder: Embedder | None = None,
    config: MemoryConfig | None = None,
) -> Iterator[Opened]:
    """A golden-format file written case by case, each case isolated (as ``agentmem eval
    --dataset`` runs it), settled."""
    dataset = load_dataset(Path(path))
    with fresh_store(embedder, config) as mem:
        family = write_golden_isolated(mem, dataset)
        settle(mem)
        yield mem, family


@contextlib.contextmanager
def locomo_store(
    path: str | os.PathLike[str],
    *,
    embedder: Embedder | None = None,
    config: MemoryConfig | None = None,
    empty: bool | str | os.PathLike[str] = True,
) -> Iterator[Opened]:
    """A LoCoMo file's conversations written and settled; with ``empty`` (True: the bundled
    templates, or a path) the suite's expect-empty questions are asked of each."""
    conversations = load_locomo(path)
    templates = () if empty is False else load_locomo_empty(None if empty is True else empty)
    with fresh_store(embedder, config) as mem:
        family = write_locomo(mem, conversations, templates)
        settle(mem)
        yield mem, family


@contextlib.contextmanager
def family_store(
    name: str,
    *,
    locomo: str | os.PathLike[str] | None = None,
    directory: str | os.PathLike[str] | None = None,
    embedder: Embedder | None = None,
    config: MemoryConfig | None = None,
) -> Iterator[Opened]:
    """Family ``name`` written into a fresh store and settled."""
    if name == "locomo":
        if locomo is None:
            raise ValidationError("locomo", "the locomo family needs a LoCoMo file")
        own = Path(directory) / LOCOMO_EMPTY_FILE if directory is not None else None
        empty: bool | Path = own if own is not None and own.exists() else True
        with locomo_store(locomo, embedder=embedder, config=config, empty=empty) as opened:
            yield opened
        return
    data = load_family(name, directory)
    with fresh_store(embedder, config) as mem:
        family = write_family(mem, data)
        settle(mem)
        yield mem, family


def plan(
    families: Sequence[str] | None,
    *,
    locomo: str | os.PathLike[str] | None = None,
    directory: str | os.PathLike[str] | None = None,
) -> tuple[list[str], dict[str, str]]:
    """(the families to run, in report order; the families left out -> why).

    Without ``families``, every family whose data is there runs (LoCoMo only with a file);
    a family asked for by name whose data is missing is an error.
    """
    asked = list(dict.fromkeys(families)) if families is not None else None
    if asked is not None:
        unknown = [f for f in asked if f not in FAMILIES]
        if unknown or not asked:
            raise ValidationError("families", f"unknown {unknown}; choose from {list(FAMILIES)}")
    run: list[str] = []
    skipped: dict[str, str] = {}
    for name in FAMILIES:
        if asked is not None and name not in asked:
            continue
        if name == "locomo":
            why = None if locomo is not None else "no LoCoMo file given (--locomo)"
        else:
            path = family_path(name, directory)
            why = None if path.exists() else f"no data file {path}"
        if why is None:
            run.append(name)
        elif asked is not None:
            raise ValidationError("families", f"{name}: {why}")
        else:
            skipped[name] = why
    return run, skipped


@contextlib.contextmanager
def run_embedder(
    embedder: Embedder | None = None, embed_cache: str | os.PathLike[str] | None = None
) -> Iterator[tuple[Embedder, DiskEmbeddingCache | None]]:
    """The embedder a run shares (default: the packaged one), behind the on-disk cache in
    ``embed_cache`` if given (closed on exit): ``(embedder, disk cache or None)``."""
    if embed_cache is None:
        yield (embedder if embedder is not None else default_embedder()), None
        return
    cached, disk = cached_on_disk(embedder, embed_cache)
    try:
        yield cached, disk
    finally:
        disk.close()


def family_stores(
    families: Sequence[str] | None = None,
    *,
    locomo: str | os.PathLike[str] | None = None,
    directory: str | os.PathLike[str] | None = None,
    embedder: Embedder | None = None,
    config: MemoryConfig | None = None,
) -> Iterator[tuple[str, Opened]]:
    """Each family of :func:`plan` in turn, written into its own fresh store: ``(name,
    (mem, family))``; the store is removed when the next one opens."""
    names, _ = plan(families, locomo=locomo, directory=directory)
    embedder = embedder if embedder is not None else default_embedder()
    for name in names:
        with family_store(
            name, locomo=locomo, directory=directory, embedder=embedder, config=config
        ) as opened:
            yield name, opened


__all__ = [
    "Opened",
    "family_store",
    "family_stores",
    "fresh_store",
    "golden_store",
    "locomo_store",
    "plan",
    "run_embedder",
    "settle",
]

"""A store's calibration profile lives in its records: in SQLite in the data dir, or in the
shared Postgres store, where every node opening it reads it."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import pytest

from agentmem import UncalibratedEmbedderWarning
from agentmem.calibration import bundled_profile
from agentmem.calibration.profile import EmbedderIdentity
from agentmem.embeddings import CachedEmbedder, OnnxMiniLMEmbedder

pytestmark = pytest.mark.both_backends


def test_a_profile_saved_by_one_open_is_read_by_the_next(make_memory: Any) -> None:
    renamed = CachedEmbedder(OnnxMiniLMEmbedder(model_name="minilm-stored-profile"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncalibratedEmbedderWarning)
        first = make_memory(embedder=renamed, background=False)
    assert first.calibration is None
    shipped = bundled_profile("all-MiniLM-L6-v2-int8", 384)
    assert shipped is not None
    fitted = dataclasses.replace(
        shipped, embedder=EmbedderIdentity("minilm-stored-profile", 384), fitted_on="here"
    )
    first.context.use_profile(fitted)
    home = first.home
    first.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncalibratedEmbedderWarning)
        again = make_memory(path=home, embedder=renamed, background=False)
    assert again.calibration == fitted and again.stats().calibration["source"] == "store"

"""Calibration profiles are data of an embedder: the bundled one, a store's own, the honest
fallback without one, and profiles fitted for other features."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from agentmem import AgentMemory, CalibrationProfile, UncalibratedEmbedderWarning
from agentmem.calibration import bundled_profile
from agentmem.calibration import store as calibration_store
from agentmem.calibration.profile import EmbedderIdentity
from agentmem.e5 import E5Embedder
from agentmem.embeddings import CachedEmbedder, OnnxMiniLMEmbedder
from agentmem.errors import ValidationError
from agentmem.maintenance.doctor import diagnose
from agentmem.recall.ranking import CALIBRATION_FEATURES, FEATURE_NAMES, RANK_FEATURES

MINILM = "all-MiniLM-L6-v2-int8"
FACTS = (
    "I prefer uv over pip for Python projects",
    "My daughter's school starts at 8:15",
    "The VPN config lives in ~/vpn/office.ovpn",
)


def renamed_minilm(name: str = "minilm-under-another-name") -> CachedEmbedder:
    """A real model that agentmem ships no profile for (the same weights, another name)."""
    return CachedEmbedder(OnnxMiniLMEmbedder(model_name=name))


def test_the_bundled_profile_round_trips_and_fits_the_code() -> None:
    profile = bundled_profile(MINILM, 384)
    assert profile is not None and profile.problem() is None
    assert set(profile.weights) == set(CALIBRATION_FEATURES)
    assert set(profile.rank_weights) == set(RANK_FEATURES)
    assert profile.named_rank_weights is not None
    assert set(profile.named_rank_weights) == set(RANK_FEATURES)
    again = CalibrationProfile.from_json(profile.to_json())
    assert again == profile
    assert bundled_profile(MINILM, 768) is None  # another width is another model
    assert bundled_profile("text-embedding-3-small", 1536) is None


def test_a_profile_for_other_features_is_refused_by_name() -> None:
    profile = bundled_profile(MINILM, 384)
    assert profile is not None
    missing = dataclasses.replace(
        profile, weights={k: v for k, v in profile.weights.items() if k != "cos"}
    )
    assert "no weight for cos" in (missing.problem() or "")
    unknown = dataclasses.replace(profile, rank_weights={**profile.rank_weights, "recency": 1.0})
    assert "recency" in (unknown.problem() or "")
    with pytest.raises(ValidationError, match="recency"):
        unknown.scoring()


def test_malformed_profiles_name_the_field() -> None:
    data = json.loads(bundled_profile(MINILM, 384).to_json())  # type: ignore[union-attr]
    del data["calibration"]["bias"]
    with pytest.raises(ValidationError, match="'bias'"):
        CalibrationProfile.from_dict(data)
    data = json.loads(bundled_profile(MINILM, 384).to_json())  # type: ignore[union-attr]
    data["ranking"]["weights"]["cos"] = "high"
    with pytest.raises(ValidationError, match=r"ranking\.weights\.cos"):
        CalibrationProfile.from_dict(data)
    with pytest.raises(ValidationError, match="not JSON"):
        CalibrationProfile.from_json("{")
    data = json.loads(bundled_profile(MINILM, 384).to_json())  # type: ignore[union-attr]
    data["chat_floor"] = 1.5
    with pytest.raises(ValidationError, match="chat_floor"):
        CalibrationProfile.from_dict(data)
    data["chat_floor"] = 0.3
    data["ranking"]["named_weights"]["cos_gap"] = 1.0  # a feature the ordering no longer has
    with pytest.raises(ValidationError, match="named ranking weighs cos_gap"):
        CalibrationProfile.from_dict(data).scoring()


def test_a_profile_without_the_newer_ranking_fields_still_orders_and_cuts_as_before() -> None:
    """A profile fitted before the second ordering, the floors and some ranking features
    existed: its ranking features weigh 0, one ordering serves every query, ``min_score``
    alone cuts."""
    data = json.loads(bundled_profile(MINILM, 384).to_json())  # type: ignore[union-attr]
    del data["ranking"]["named_weights"], data["chat_floor"], data["item_floor"]
    for name in ("name_match", "prev_cos", "id_miss"):
        data["ranking"]["weights"].pop(name, None)
    old = CalibrationProfile.from_dict(data)
    assert old.problem() is None
    scoring = old.scoring()
    assert scoring.named_rank_weights is None
    assert scoring.chat_floor is None and scoring.item_floor is None
    assert scoring.rank_weights is not None and len(scoring.rank_weights) == len(FEATURE_NAMES)
    assert scoring.rank_weights[FEATURE_NAMES.index("name_match")] == 0.0


def test_the_probe_tells_models_apart(shared_embedder: CachedEmbedder) -> None:
    ours = EmbedderIdentity.of(shared_embedder)
    shipped = bundled_profile(MINILM, 384)
    assert shipped is not None and shipped.embedder.same_vectors(ours)
    # the same weights under another name make the same vectors; another model does not
    assert EmbedderIdentity.of(renamed_minilm()).same_vectors(ours)
    assert EmbedderIdentity.of(E5Embedder()).same_vectors(ours) is False
    assert EmbedderIdentity("x", 384).same_vectors(ours) is None  # no probe to compare


def test_the_default_embedder_scores_with_its_bundled_profile(make_memory: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncalibratedEmbedderWarning)
        mem = make_memory()
    assert mem.context.calibration.source == "bundled"
    assert mem.calibration == bundled_profile(MINILM, 384)


def _uncalibrated(tmp_path: Path) -> AgentMemory:
    with pytest.warns(UncalibratedEmbedderWarning) as caught:
        mem = AgentMemory(tmp_path / "mem", embedder=renamed_minilm(), background=False)
    assert len(caught) == 1
    assert "calibrate" in str(caught[0].message)
    assert "minilm-under-another-name" in str(caught[0].message)
    return mem


def test_no_profile_warns_once_and_falls_back_to_rank_scores(tmp_path: Path) -> None:
    mem = _uncalibrated(tmp_path)
    assert mem.calibration is None and mem.context.calibration.source == "none"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shared = AgentMemory(tmp_path / "mem", embedder=mem.embedder, background=False)
        assert shared.context is mem.context  # a second user of the open store: no warning
    m = mem.bind("t", user_id="u")
    for fact in FACTS:
        m.remember(fact, memory_type="preference")
    mem.flush()
    # unrelated to every memory: nothing (the bundled MiniLM constants would rank by cosine)
    assert m.recall("quantum chromodynamics lecture notes").items == []
    # a query naming something stored: the fused list, best first, scored by rank
    hits = m.recall("do I prefer uv or pip for Python?").items
    assert hits[0].content == FACTS[0]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].score <= 1.0
    # the price of not knowing what this model's cosines mean: a paraphrase sharing no word
    # returns nothing either, until calibrate fits a profile
    assert m.recall("what time does my kid's class begin?").items == []
    # min_score 0 asks for everything, as with a profile
    assert len(m.recall("quantum chromodynamics", min_score=0.0).items) == len(FACTS)
    shared.close()
    mem.close()


def test_a_stale_store_profile_is_not_applied(tmp_path: Path) -> None:
    mem = _uncalibrated(tmp_path)
    shipped = bundled_profile(MINILM, 384)
    assert shipped is not None
    identity = EmbedderIdentity("minilm-under-another-name", 384)
    fitted = dataclasses.replace(shipped, embedder=identity, fitted_at="2026-01-01")
    mem.context.use_profile(fitted)
    assert mem.context.calibration.source == "store"
    stale = dataclasses.replace(fitted, weights={**fitted.weights, "retired_feature": 1.0})
    calibration_store.save(mem.records, stale)  # fitted by an agentmem with other features
    home = mem.home
    mem.close()
    with pytest.warns(UncalibratedEmbedderWarning, match="out of date: .*retired_feature"):
        again = AgentMemory(home, embedder=renamed_minilm(), background=False)
    assert again.calibration is None
    calibration_store.save(again.records, fitted)
    again.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncalibratedEmbedderWarning)
        third = AgentMemory(home, embedder=renamed_minilm(), background=False)
    assert third.calibration == fitted and third.context.calibration.source == "store"
    with pytest.raises(ValidationError, match="fitted for"):
        third.context.use_profile(shipped)  # MiniLM's name: another embedder's weights
    third.close()


def test_doctor_names_the_calibration_state(tmp_path: Path, make_memory: Any) -> None:
    mem = _uncalibrated(tmp_path)
    assert any("agentmem calibrate" in n for n in diagnose(mem.context).notes)
    shipped = bundled_profile(MINILM, 384)
    assert shipped is not None
    # fitted for a model of this name whose probe sentences embed otherwise
    other = EmbedderIdentity.of(E5Embedder())
    foreign = dataclasses.replace(
        shipped, embedder=dataclasses.replace(other, model_name="minilm-under-another-name")
    )
    mem.context.use_profile(foreign)
    notes = diagnose(mem.context).notes
    assert any("differ" in n and "agentmem calibrate" in n for n in notes)
    mem.close()
    healthy = make_memory()  # the bundled model with its own profile: nothing to say
    assert not [n for n in diagnose(healthy.context).notes if "calibrat" in n]


def test_an_unreadable_store_profile_is_reported_not_fatal(
    make_memory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    mem = make_memory()
    mem.records.meta.set(calibration_store.META_KEY, '{"weights": ')  # a torn write, say
    home = mem.home
    mem.close()
    # the open that `doctor` and `calibrate` need works, says what is wrong and how to fix it
    with caplog.at_level("WARNING", logger="agentmem"):
        again = make_memory(home)
    assert "unreadable calibration profile" in caplog.text and "agentmem calibrate" in caplog.text
    assert again.context.calibration.source == "bundled"  # as if the store had none
    report = diagnose(again.context)
    assert not report.ok
    assert any("calibration profile" in p and "agentmem calibrate" in p for p in report.problems)
    assert again.records.meta.get(calibration_store.META_KEY) == '{"weights": '  # kept as found
    shipped = bundled_profile(MINILM, 384)
    assert shipped is not None
    again.context.use_profile(dataclasses.replace(shipped, fitted_at="2026-01-01"))  # calibrate
    assert diagnose(again.context).ok


def test_a_damaged_shipped_profile_names_the_file_and_the_reinstall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped profile is a file of the installed package, as the model is: a damaged
    one is said as the model files are, with the command that restores it."""
    from agentmem.calibration import profile as profile_module
    from agentmem.errors import ModelFilesError

    shipped = profile_module.bundled_path(MINILM)
    damaged = tmp_path / shipped.name
    damaged.write_text(shipped.read_text(encoding="utf-8")[:500], encoding="utf-8")  # torn
    monkeypatch.setattr(profile_module, "bundled_path", lambda name: damaged)
    with pytest.raises(ModelFilesError) as caught:
        AgentMemory(tmp_path / "mem", background=False)
    assert str(damaged) in str(caught.value) and "damaged" in str(caught.value)
    assert caught.value.context["fix"] == "pip install --force-reinstall --no-deps agentmem-layer"

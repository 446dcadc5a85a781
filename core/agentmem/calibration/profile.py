"""Calibration profiles: the weights that turn one embedder's evidence into recall scores.

A cosine of 0.45 is a close match for one model and noise for another, so the calibration
(weights, bias, score gap) and the ranking weights are data fitted for one embedder, never
constants of the code. A :class:`CalibrationProfile` holds them with the identity of the
embedder they were fitted for (:class:`EmbedderIdentity`), the data and version they were
fitted on and when. Weights are keyed by feature name, so a profile fitted for another set
of features than the running code computes is recognised as such (:meth:`problem`) instead
of being applied misaligned.

Profiles are JSON (:meth:`CalibrationProfile.to_json`)::

    {
      "format": 1,
      "embedder": {"model_name": "all-MiniLM-L6-v2-int8", "dimensions": 384,
                   "probe": "5b0c...", "probe_similarities": [0.123, ...]},
      "calibration": {"weights": {"cos": 4.469, ...}, "bias": -2.31},
      "ranking": {"weights": {"cos": 1.6, ...}, "named_weights": {"cos": 0.4, ...}},
      "score_gap": 0.3, "chat_floor": 0.3, "item_floor": 0.5,
      "fitted_on": "golden + calibration_cases",
      "fitted_at": "2026-11-28T15:30:00+00:00",
      "agentmem_version": "0.1.0"
    }

Where a store's profile comes from: :mod:`agentmem.calibration.store`. Models that ship with
agentmem have theirs as package data (:func:`bundled_profile`).

Example:
    >>> profile = bundled_profile("all-MiniLM-L6-v2-int8", 384)
    >>> profile.problem() is None, profile.scoring().calibrated
    (True, True)
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..distribution import DISTRIBUTION
from ..embeddings import Embedder
from ..errors import ModelFilesError, ValidationError
from ..recall.ranking import CALIBRATION_FEATURES, FEATURE_NAMES, RANK_FEATURES, Scoring

#: Version of the JSON layout (not of the weights).
FORMAT = 1
#: Fixed texts whose vectors identify a model beyond its name (see :func:`probe`).
PROBE_TEXTS: tuple[str, ...] = (
    "The quick brown fox jumps over the lazy dog.",
    "I prefer green tea in the morning.",
    "Error 503: the upstream server is unavailable.",
    "Der Zug nach Berlin fährt um acht Uhr ab.",
)
#: How far each pairwise similarity of the probe texts may move (another CPU's kernels, a
#: quantised build of the same model) and still be the same model.
PROBE_TOLERANCE = 0.02
_PROFILES = Path(__file__).with_name("profiles")


class UncalibratedEmbedderWarning(UserWarning):
    """The store's embedder has no calibration profile that this version of agentmem can
    use: recall falls back to rank-based scores with ``min_score`` applied to keyword
    evidence only (see :data:`agentmem.recall.ranking.UNCALIBRATED`) until ``agentmem
    calibrate`` (:meth:`agentmem.AgentMemory.calibrate`) fits one."""


@dataclass(frozen=True)
class EmbedderIdentity:
    """Which embedder a profile was fitted for.

    Attributes:
        model_name: The embedder's ``model_name``.
        dimensions: The length of its vectors.
        probe: A hash of the vectors of :data:`PROBE_TEXTS`, rounded to two decimals (None
            when the profile was not fitted against a live embedder).
        probe_similarities: The pairwise cosine similarities of those vectors, rounded to
            three decimals: compared with a tolerance, since rounding alone is not stable
            across CPUs.
    """

    model_name: str
    dimensions: int
    probe: str | None = None
    probe_similarities: tuple[float, ...] | None = None

    @classmethod
    def of(cls, embedder: Embedder, *, with_probe: bool = True) -> EmbedderIdentity:
        """The identity of ``embedder``; ``with_probe`` embeds :data:`PROBE_TEXTS`."""
        if not with_probe:
            return cls(str(embedder.model_name), int(embedder.dimensions))
        digest, sims = probe(embedder)
        return cls(str(embedder.model_name), int(embedder.dimensions), digest, sims)

    def names(self, model_name: str, dimensions: int | None) -> bool:
        """True if this identity is of that model name and width (None: any width, for an
        embedder that learns its own on first use)."""
        return self.model_name == model_name and dimensions in (None, self.dimensions)

    def same_vectors(self, other: EmbedderIdentity) -> bool | None:
        """Whether two identities' probes show the same model (None: one has no probe)."""
        if self.probe is None or other.probe is None:
            return None
        if self.probe == other.probe:
            return True
        a, b = self.probe_similarities, other.probe_similarities
        if a is None or b is None or len(a) != len(b):
            return False
        return all(abs(x - y) <= PROBE_TOLERANCE for x, y in zip(a, b, strict=True))

    def describe(self) -> str:
        return f"{self.model_name!r} ({self.dimensions}-d)"


def probe(embedder: Embedder) -> tuple[str, tuple[float, ...]]:
    """(hash of the rounded probe vectors, their pairwise similarities) of ``embedder``."""
    vectors = np.asarray(embedder.embed_documents(list(PROBE_TEXTS)), dtype=np.float64)
    rounded = np.round(vectors, 2) + 0.0  # + 0.0: -0.0 and 0.0 hash alike
    digest = hashlib.sha256(rounded.astype(np.float32).tobytes()).hexdigest()[:16]
    sims = vectors @ vectors.T
    n = len(PROBE_TEXTS)
    pairs = tuple(round(float(sims[i, j]), 3) for i in range(n) for j in range(i + 1, n))
    return digest, pairs


@dataclass(frozen=True)
class CalibrationProfile:
    """The calibration and ranking weights of one embedder (see the module docstring).

    Attributes:
        embedder: The embedder it was fitted for.
        weights: Calibration weights by feature name.
        bias: The calibration's intercept.
        rank_weights: Ordering weights by feature name (a ranking feature without one weighs
            0: a profile fitted before the feature existed still orders by the others).
        named_rank_weights: The ordering of a query that names a speaker (see
            :attr:`~agentmem.recall.ranking.Scoring.named_rank_weights`); None: one
            ordering for every query.
        chat_floor, item_floor: Shares of the best score down to which chat messages and
            other items are returned below ``min_score`` (see
            :func:`~agentmem.recall.ranking.kept_indices`); None: ``min_score`` alone.
        score_gap: How far below a query's best score a self-contained item may score and
            still be returned (None: no such cut).
        fitted_on: The labelled data it was fitted on (names and versions).
        fitted_at: When, ISO 8601.
        agentmem_version: The agentmem version that fitted it.

    Example:
        >>> p = CalibrationProfile.from_json(bundled_path("all-MiniLM-L6-v2-int8").read_text())
        >>> p.embedder.dimensions
        384
    """

    embedder: EmbedderIdentity
    weights: Mapping[str, float]
    bias: float
    rank_weights: Mapping[str, float]
    score_gap: float | None
    named_rank_weights: Mapping[str, float] | None = None
    chat_floor: float | None = None
    item_floor: float | None = None
    fitted_on: str = ""
    fitted_at: str = ""
    agentmem_version: str = ""
    format: int = field(default=FORMAT)

    def problem(
        self,
        calibration_features: tuple[str, ...] = CALIBRATION_FEATURES,
        rank_features: tuple[str, ...] = RANK_FEATURES,
    ) -> str | None:
        """Why this profile cannot score with the features the code computes (it was fitted
        for another set: a feature missing or one the code does not have), or None."""
        problems = []
        rankings = [("ranking", self.rank_weights)]
        if self.named_rank_weights is not None:
            rankings.append(("named ranking", self.named_rank_weights))
        missing = sorted(set(calibration_features) - set(self.weights))
        if missing:
            problems.append(f"its calibration has no weight for {', '.join(missing)}")
        for what, have, want in (
            ("calibration", self.weights, calibration_features),
            *((name, weights, rank_features) for name, weights in rankings),
        ):
            unknown = sorted(set(have) - set(want))
            if unknown:
                problems.append(
                    f"its {what} weighs {', '.join(unknown)}, which this version does not use"
                )
        if self.format != FORMAT:
            problems.append(f"it is in format {self.format}, this version reads {FORMAT}")
        return "; ".join(problems) or None

    def scoring(self) -> Scoring:
        """The profile compiled against :data:`~agentmem.recall.ranking.FEATURE_NAMES`.

        Raises:
            ValidationError: the profile does not fit the code's features (:meth:`problem`).
        """
        problem = self.problem()
        if problem is not None:
            raise ValidationError("profile", problem)
        return Scoring(
            weights=_aligned(self.weights),
            bias=float(self.bias),
            rank_weights=_aligned(self.rank_weights),
            named_rank_weights=None
            if self.named_rank_weights is None
            else _aligned(self.named_rank_weights),
            score_gap=self.score_gap,
            chat_floor=self.chat_floor,
            item_floor=self.item_floor,
        )

    # -- JSON ----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        identity: dict[str, Any] = {
            "model_name": self.embedder.model_name,
            "dimensions": self.embedder.dimensions,
            "probe": self.embedder.probe,
            "probe_similarities": None
            if self.embedder.probe_similarities is None
            else list(self.embedder.probe_similarities),
        }
        return {
            "format": self.format,
            "embedder": identity,
            "calibration": {"weights": dict(self.weights), "bias": self.bias},
            "ranking": {
                "weights": dict(self.rank_weights),
                **(
                    {}
                    if self.named_rank_weights is None
                    else {"named_weights": dict(self.named_rank_weights)}
                ),
            },
            "score_gap": self.score_gap,
            "chat_floor": self.chat_floor,
            "item_floor": self.item_floor,
            "fitted_on": self.fitted_on,
            "fitted_at": self.fitted_at,
            "agentmem_version": self.agentmem_version,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CalibrationProfile:
        """Parse a profile.

        Raises:
            ValidationError: a field is missing or of the wrong type (named).
        """
        try:
            ident = data["embedder"]
            sims = ident.get("probe_similarities")
            identity = EmbedderIdentity(
                model_name=_str(ident["model_name"], "embedder.model_name"),
                dimensions=_int(ident["dimensions"], "embedder.dimensions"),
                probe=None if ident.get("probe") is None else str(ident["probe"]),
                probe_similarities=None if sims is None else tuple(float(x) for x in sims),
            )
            gap = data.get("score_gap")
            speaker = data["ranking"].get("named_weights")
            return cls(
                embedder=identity,
                weights=_weights(data["calibration"]["weights"], "calibration.weights"),
                bias=_float(data["calibration"]["bias"], "calibration.bias"),
                rank_weights=_weights(data["ranking"]["weights"], "ranking.weights"),
                score_gap=None if gap is None else _float(gap, "score_gap"),
                named_rank_weights=None
                if speaker is None
                else _weights(speaker, "ranking.named_weights"),
                chat_floor=_share(data.get("chat_floor"), "chat_floor"),
                item_floor=_share(data.get("item_floor"), "item_floor"),
                fitted_on=str(data.get("fitted_on", "")),
                fitted_at=str(data.get("fitted_at", "")),
                agentmem_version=str(data.get("agentmem_version", "")),
                format=_int(data.get("format", FORMAT), "format"),
            )
        except KeyError as exc:
            raise ValidationError("profile", f"missing field {exc.args[0]!r}") from exc
        except (TypeError, AttributeError) as exc:
            raise ValidationError("profile", f"malformed: {exc}") from exc

    @classmethod
    def from_json(cls, raw: str) -> CalibrationProfile:
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise ValidationError("profile", f"not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise ValidationError("profile", "must be a JSON object")
        return cls.from_dict(data)


def _aligned(weights: Mapping[str, float]) -> tuple[float, ...]:
    """Weights by name as a tuple aligned with :data:`FEATURE_NAMES` (0 where absent)."""
    return tuple(float(weights.get(n, 0.0)) for n in FEATURE_NAMES)


def _share(value: Any, name: str) -> float | None:
    """An optional share in [0, 1] (absent or null: None)."""
    if value is None:
        return None
    share = _float(value, name)
    if not 0.0 <= share <= 1.0:
        raise ValidationError(f"profile.{name}", f"must be between 0 and 1, got {share}")
    return share


def _str(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError(f"profile.{name}", f"must be a non-empty string, got {value!r}")
    return value


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(f"profile.{name}", f"must be a positive integer, got {value!r}")
    return value


def _float(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(f"profile.{name}", f"must be a finite number, got {value!r}")
    return float(value)


def _weights(value: Any, name: str) -> dict[str, float]:
    if not isinstance(value, dict):
        raise ValidationError(f"profile.{name}", "must be an object of feature: weight")
    return {str(k): _float(v, f"{name}.{k}") for k, v in value.items()}


# -- profiles that ship with agentmem ------------------------------------------------------------
def bundled_path(model_name: str) -> Path:
    """Where the package keeps the profile of ``model_name`` (it may not exist)."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in model_name)
    return _PROFILES / f"{safe}.json"


def bundled_profile(model_name: str, dimensions: int | None) -> CalibrationProfile | None:
    """The profile agentmem ships for that model, or None."""
    path = bundled_path(model_name)
    if not path.is_file():
        return None
    try:
        profile = CalibrationProfile.from_json(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValidationError) as exc:
        # a file of the installed package, as the model files are: reinstalling restores it
        fix = f"pip install --force-reinstall --no-deps {DISTRIBUTION}"
        raise ModelFilesError(
            f"the calibration profile agentmem ships for {model_name} ({path}) is damaged "
            f"({exc}); reinstall agentmem to restore it: {fix}",
            path=str(path),
            fix=fix,
        ) from exc
    return profile if profile.embedder.names(model_name, dimensions) else None


__all__ = [
    "FORMAT",
    "PROBE_TEXTS",
    "CalibrationProfile",
    "EmbedderIdentity",
    "UncalibratedEmbedderWarning",
    "bundled_path",
    "bundled_profile",
    "probe",
]

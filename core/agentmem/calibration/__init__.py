"""Calibration: the weights that make one embedder's scores mean something.

- :mod:`.profile`: :class:`CalibrationProfile`, a value stored as JSON, with the identity of
  the embedder it was fitted for; the profiles shipped with agentmem (:func:`bundled_profile`).
- :mod:`.store`: where a store keeps its own profile (the records store's ``meta``) and which
  profile an open store scores with.
- :mod:`.fit`: fitting a profile on labelled candidates (logistic regression, numpy only).

Example:
    >>> from agentmem.calibration import bundled_profile
    >>> bundled_profile("all-MiniLM-L6-v2-int8", 384).score_gap
    0.3
"""

from __future__ import annotations

from .profile import (
    CalibrationProfile,
    EmbedderIdentity,
    UncalibratedEmbedderWarning,
    bundled_profile,
)

__all__ = [
    "CalibrationProfile",
    "EmbedderIdentity",
    "UncalibratedEmbedderWarning",
    "bundled_profile",
]

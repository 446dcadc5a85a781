"""The offline judge: does a new memory supersede an older one?

SUPERSEDE only when both state the same single-valued attribute of the same person: the
same topic key from the rule table (read in the first person, so "Jon lives in Paris" and
"I live in Berlin" both give ``residence``), or the same numeric attribute with another
value ("the rate limit is 500" after "the rate limit is 100"). Statements about different
people ("Jon lives in Paris", "Gina lives in Rome") are always kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..base import Verdict
from . import rules
from .perspective import first_person
from .text import content_words, normalise, sentences

__all__ = ["judge", "keyed_frames", "numeric_attribute"]

_NUMERIC_COPULA = re.compile(
    r"^(?:the |our |my |your )?(?P<s>[a-z][\w\- ]{2,60}?) (?:is|are|was|were|equals|"
    r"is set to|has been set to|should be) (?P<v>.*\d.*)$",
    re.I,
)


def keyed_frames(text: str) -> tuple[str | None, set[str]]:
    """(subject key or None, topic keys of the attributes ``text`` states)."""
    subject, fp = first_person(text)
    found = {f.topic_key.split(".", 1)[-1] for _, f in rules.frames(fp) if f.topic_key}
    if subject is None:
        return None, found
    return subject, found


def numeric_attribute(text: str) -> tuple[str, str] | None:
    """(subject, value) of a statement like "the rate limit is 100 requests per minute"."""
    first = sentences(text)
    if not first:
        return None
    m = _NUMERIC_COPULA.match(normalise(first[0]))
    if m is None:
        return None
    subject = " ".join(content_words(m["s"]))
    if not subject:
        return None
    return subject, " ".join(content_words(m["v"]))


def judge(new: str, candidates: Sequence[tuple[str, str]]) -> list[Verdict]:
    """A verdict per (id, content) candidate (see the module docstring)."""
    new_subject, new_keys = keyed_frames(new)
    new_numeric = numeric_attribute(new)
    out: list[Verdict] = []
    for cid, content in candidates:
        old_subject, old_keys = keyed_frames(content)
        same_person = new_subject is None or old_subject is None or new_subject == old_subject
        supersede = same_person and bool(new_keys & old_keys)
        if not supersede and same_person and new_numeric is not None:
            old_numeric = numeric_attribute(content)
            supersede = (
                old_numeric is not None
                and old_numeric[0] == new_numeric[0]
                and old_numeric[1] != new_numeric[1]
            )
        out.append(Verdict(candidate_id=cid, decision="SUPERSEDE" if supersede else "KEEP"))
    return out

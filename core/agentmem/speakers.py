"""Who wrote a message: the one rule every reader of a chat message applies.

A message names its speaker in one of two ways: ``metadata["speaker"]`` (what an integration
that knows the participants sets), or a leading ``"Name: "`` in its content, the way most
people store a multi-party chat (``{"role": "user", "content": "Caroline: I went to ..."}``).
Extraction (who "I" is), session summaries and chunks, restatement keys and ranking
(``speaker_match``) all read the speaker through :func:`resolve_speaker`, so the two ways
give the same memories and the same ranking.

**The rule for a content prefix.** A leading ``Name:`` followed by whitespace and more text
names the speaker when ``Name`` is one to three words, each capitalised with at least one
lower-case letter and no digit (``Caroline``, ``Dr. Ada Lovelace``, ``Jean-Luc``, ``O'Brien``),
at most :data:`MAX_NAME_CHARS` characters, and no word of it is a label
(:data:`LABEL_WORDS`: ``Note``, ``Error``, ``Re``, ``Status``, ``Update``, weekdays, role
names ...). So ``"Note: ..."``, ``"TODO: ..."`` (no lower-case letter), ``"http://..."`` (no
space after the colon), ``"10:30"`` and ``"Status: delivered"`` are not speakers. Only turns
that people or assistants write may carry one: a tool output or a system message never does.

The rule looks at one message at a time, deliberately: ranking and the restatement key are
computed per row, at index time and at query time, and must agree with what extraction saw.

Example:
    >>> resolve_speaker("user", "Caroline: I went to a support group.", None)
    ('Caroline', 'I went to a support group.')
    >>> resolve_speaker("user", "Note: the meeting moved.", None)
    (None, 'Note: the meeting moved.')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "LABEL_WORDS",
    "MAX_NAME_CHARS",
    "metadata_speaker",
    "resolve_speaker",
    "speaker_prefix",
]

#: Longest name a content prefix may give.
MAX_NAME_CHARS = 40

#: Words that precede a colon without naming anyone: headings, mail and log labels, tool
#: fields, interjections, function words, days, and the roles that speak for no person.
LABEL_WORDS = frozenset(
    """note notes nb ps fyi btw tldr re fwd fw subject from to cc bcc date sent reply edit
    edited update updates error errors warning warnings info debug trace fatal critical
    exception traceback status state result results output input response request answer
    answers question questions hint tip tips todo done summary context reminder important
    urgent alert notice news heads addendum correction quote source sources ref reference
    link links url example examples step steps option options task tasks action actions
    item items goal goals plan plans agenda topic title name description details detail
    total price cost amount address phone email location time day week month year reason
    reasons problem problems issue issues solution fix cause bug feature caution
    disclaimer translation transcript definition meaning usage syntax command code file
    path version log logs message messages comment comments feedback review rating score
    pros cons misc other yes no ok okay sure sorry well also and but so big quick then first
    second third finally next last today tonight tomorrow yesterday morning afternoon
    evening night monday tuesday wednesday thursday friday saturday sunday the this that
    these those my our your his her their its a an one some all any every each here there
    what why how which who when where breaking key main new old system tool hi hello hey
    thanks please diet allergy allergies budget destination ingredients instructions
    directions recipe menu schedule deadline priority owner assignee category type tags
    size colour color weight height age occupation role company team project department
    city country website username password account order invoice booking reservation
    flight hotel room seat weather forecast verdict conclusion recommendation suggestion
    suggestions risk risks caveat overview background introduction intro method approach
    requirements changes changelog added removed fixed deprecated highlights attendees
    participants venue duration distance calories servings difficulty mood symptoms
    medication dose dosage""".split()
)

_PREFIX = re.compile(r"(?P<name>[^\W\d_][\w'’.\-]*(?: [^\W\d_][\w'’.\-]*){0,2}):\s+(?=\S)")
#: Roles whose turns may name a speaker (a tool or the system speaks for no person).
_SPEAKING_ROLES = frozenset({"user", "assistant"})


def _name_like(name: str) -> bool:
    if len(name) > MAX_NAME_CHARS:
        return False
    for word in name.split():
        if not word[0].isupper() or not any(c.islower() for c in word):
            return False
        if any(c.isdigit() for c in word) or word.rstrip(".").lower() in LABEL_WORDS:
            return False
    return True


def speaker_prefix(content: str) -> tuple[str, str] | None:
    """``(name, the rest of the content)`` when ``content`` opens with a speaker's
    ``"Name: "`` (see the module docstring), else None."""
    m = _PREFIX.match(content)
    if m is None or not _name_like(m["name"]):
        return None
    return m["name"], content[m.end() :]


def metadata_speaker(metadata: Mapping[str, Any] | None) -> str | None:
    """The speaker ``metadata["speaker"]`` names (stripped), if any."""
    speaker = metadata.get("speaker") if metadata else None
    if isinstance(speaker, str) and speaker.strip():
        return speaker.strip()
    return None


def resolve_speaker(role: str | None, content: str, named: str | None) -> tuple[str | None, str]:
    """``(speaker, text)`` of a message: who wrote it and what they said.

    ``named`` (the metadata's speaker) wins; a content prefix that repeats it is dropped from
    the text. Without one, a content prefix names the speaker of a ``user`` or ``assistant``
    turn (or of a text whose role is unknown, ``role=None``) and is dropped from the text.
    Otherwise ``(None, content)``.
    """
    found = speaker_prefix(content) if role is None or role in _SPEAKING_ROLES else None
    if named is not None:
        if found is not None and found[0].lower() == named.lower():
            return named, found[1]
        return named, content
    if found is not None:
        return found
    return None, content

"""The offline session summary: the session's memories, the latest value of each, in budget.

A summary is built from what the extractor (:mod:`.extract`) finds in the turns, so it says
who stated what in the third person with resolved dates, rather than concatenating turns:

1. **Who and when**: "Caroline and Melanie talked on 8 May 2023." when the turns carry
   speaker names and times (the assistant of an agent chat is not named).
2. **Only the latest value** of a changed fact: of the statements with the same topic key
   (the same single-valued attribute of the same person) only the last is kept, and so is a
   statement that says an attribute changed ("raised the budget to 4500 euros") over an
   earlier one about the same attribute.
3. **Constraints first**: standing instructions and health, diet and allergy statements are
   always kept; then decisions, tasks and single-valued attributes (a topic key), then the
   rest by substance per word.
4. **Within the word limit**: fillers ("really", "so", "super") are dropped, sentences are
   taken whole in their order of priority while they fit, and printed in conversation
   order. A session without any statement (tool output, small talk) falls back to its most
   representative sentences (word frequency, Luhn) with the writer's role, prefixes counted.

Example:
    >>> from agentmem.llm.base import ChatTurn
    >>> summarize([ChatTurn("user", "I'm vegetarian and I have a shellfish allergy.")])
    'The user is vegetarian and the user has a shellfish allergy.'
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ...speakers import resolve_speaker
from ..base import ChatTurn
from .dates import format_day
from .extract import MIN_SUBSTANCE, keep, statements
from .perspective import USER, first_person
from .rules import frames
from .text import content_words, sentences

__all__ = ["changes_attribute", "summarize"]

#: Words dropped from summary sentences: emphasis that costs words and says nothing.
_FILLERS = re.compile(
    r"\s*\b(?:really|so|super|totally|just|actually|pretty|very|kinda|sorta|literally|"
    r"definitely|absolutely|honestly|basically|seriously)\b(?=\s)",
    re.I,
)
_CONSTRAINT_TYPES = frozenset({"instruction"})
_CONSTRAINT = re.compile(
    r"\b(?:allerg\w*|vegetarian|vegan|gluten|lactose|celiac|coeliac|diabet\w*|asthma\w*|"
    r"pregnan\w*|medication|motion sickness|seasick\w*|carsick\w*|intoleran\w*|kosher|halal|"
    r"wheelchair|injur\w*|disabilit\w*|always|never)\b",
    re.I,
)
_CHANGE = re.compile(
    r"\b(?:raised|increased|lowered|reduced|cut|changed|moved|pushed|bumped|upped|extended|"
    r"shortened|updated|switched|postponed|rescheduled|no longer|instead|now)\b",
    re.I,
)
_PRIORITY = {"instruction": 0, "decision": 1, "task": 1}
#: Priority of a statement of a single-valued attribute (a topic key): with decisions.
_KEYED_PRIORITY = 1


@dataclass(frozen=True, slots=True)
class _Item:
    order: int
    text: str
    memory_type: str
    topic_key: str | None
    substance: int


def changes_attribute(newer: str, older: str) -> bool:
    """True when ``newer`` says an attribute changed and ``older`` states the same one.

    The attribute is a noun the two share among the subject nouns of ``older`` ("budget" in
    "Our budget is 4000 euros" and "We raised the budget to 4500 euros").
    """
    if not _CHANGE.search(newer):
        return False
    _, older_fp = first_person(older)  # the rules read "my budget is", not "Nora's budget is"
    old_nouns = {w for _, f in frames(older_fp) for w in re.split(r"[._]", f.topic_key or "") if w}
    old_nouns |= set(_head_nouns(older))
    new_words = set(content_words(newer))
    return bool(old_nouns & new_words - {"user"})


def _head_nouns(text: str) -> list[str]:
    """The nouns a value is stated about: the words before "is/are" of a copula."""
    m = re.search(
        r"\b(?:my|our|the|'s)\s+(?P<s>(?:[a-z\-]+ ){0,2}[a-z\-]+)\s+(?:is|are|was)\b", text, re.I
    )
    return content_words(m["s"]) if m else []


def _shorten(text: str) -> str:
    t = _FILLERS.sub("", text)
    return re.sub(r"\s+", " ", t).strip()


def summarize(
    turns: Sequence[ChatTurn],
    *,
    max_words: int = 200,
    min_substance: int = MIN_SUBSTANCE,
    lead: bool = True,
) -> str:
    """A summary of at most ``max_words`` words (see the module docstring); ``lead=False``
    leaves out who-and-when (an update appended to a running summary)."""
    if max_words <= 0:
        return ""
    items = _items(turns, min_substance)
    if not items:
        return _fallback(turns, max_words)
    items = _latest_only(items)
    opening = _lead(turns) if lead else ""
    budget = max_words - len(opening.split())
    if budget < 10:  # too small for who-and-when: spend it on content
        opening, budget = "", max_words
    ranked = sorted(
        items,
        key=lambda i: (
            0 if i.memory_type in _CONSTRAINT_TYPES or _CONSTRAINT.search(i.text) else 1,
            _PRIORITY.get(i.memory_type, _KEYED_PRIORITY if i.topic_key else 2),
            -i.substance / math.sqrt(max(len(i.text.split()), 1)),
            i.order,
        ),
    )
    chosen: list[_Item] = []
    used = 0
    for item in ranked:
        n = len(item.text.split())
        if used + n <= budget:
            chosen.append(item)
            used += n
    if not chosen:  # one long statement: cut it
        words = ranked[0].text.split()[: max(budget - 1, 1)]
        return " ".join([opening, " ".join(words) + " …"]).strip()
    chosen.sort(key=lambda i: i.order)
    return " ".join([opening, *(i.text for i in chosen)]).strip()


def _items(turns: Sequence[ChatTurn], min_substance: int) -> list[_Item]:
    out: list[_Item] = []
    seen: set[str] = set()
    for turn in turns:
        for st in statements(turn):
            if not keep(st, min_substance):
                continue
            text = _shorten(st.content)
            if text.lower() in seen:
                continue
            seen.add(text.lower())
            out.append(_Item(len(out), text, st.memory_type, st.topic_key, st.substance))
    return out


def _latest_only(items: list[_Item]) -> list[_Item]:
    """Drop statements a later one replaces (same topic key, or a stated change)."""
    dropped: set[int] = set()
    for i, older in enumerate(items):
        for newer in items[i + 1 :]:
            same_key = older.topic_key is not None and older.topic_key == newer.topic_key
            if same_key or changes_attribute(newer.text, older.text):
                dropped.add(older.order)
                break
    return [i for i in items if i.order not in dropped]


def _lead(turns: Sequence[ChatTurn]) -> str:
    names: list[str] = []
    for t in turns:
        if t.role not in ("user", "assistant"):
            continue
        name, _ = resolve_speaker(t.role, t.content, t.speaker)
        if name and name not in names:
            names.append(name)
    if not names and any(t.role == "user" for t in turns):
        names.append(USER)
        if any(t.role == "assistant" for t in turns):
            names.append("the assistant")
    when = next((t.time for t in turns if t.time is not None), None)
    if not names:
        return ""
    who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    who = who[:1].upper() + who[1:]
    return f"{who} talked on {format_day(when)}." if when else ""


def _fallback(turns: Sequence[ChatTurn], max_words: int) -> str:
    """Luhn-style extractive summary for turns that state nothing about anyone."""
    units: list[tuple[int, str, str]] = []
    for turn in turns:
        if turn.role == "system":
            continue
        for s in sentences(turn.content):
            units.append((len(units), turn.role, s))
    if not units:
        return ""
    freq = Counter(w for _, _, s in units for w in content_words(s))
    top = max(freq.values()) if freq else 1
    scored: list[tuple[float, int]] = []
    for idx, role, s in units:
        ws = content_words(s)
        if not ws:
            continue
        score = sum(freq[w] / top for w in ws) / math.sqrt(len(ws))
        score -= 0.3 if role == "tool" else 0.0
        score -= 0.3 if len(ws) < 3 else 0.0
        score -= 0.2 if s.rstrip().endswith("?") else 0.0
        scored.append((score, idx))
    scored.sort(key=lambda x: (-x[0], x[1]))
    chosen: list[int] = []
    used = 0
    for _, idx in scored:
        n = len(units[idx][2].split()) + 1  # the role prefix counts
        if used + n <= max_words:
            chosen.append(idx)
            used += n
    if not chosen:
        _, role, s = units[scored[0][1]] if scored else units[0]
        words = s.split()[: max(max_words - 2, 1)]
        return f"{role.capitalize()}: {' '.join(words)} …"
    chosen.sort()
    parts: list[str] = []
    last_role = None
    for idx in chosen:
        _, role, s = units[idx]
        parts.append(f"{role.capitalize()}: {s}" if role != last_role else s)
        last_role = role
    return " ".join(parts)

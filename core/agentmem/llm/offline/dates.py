"""Relative dates in a statement resolved against the time it was said.

"I went there yesterday", said on 8 May 2023, becomes "I went there on 7 May 2023": a memory
read months later (or by someone else) still says when. Expressions resolved:

- days: ``yesterday``, ``the day before yesterday``, ``today``, ``tonight``, ``this
  morning/afternoon/evening``, ``last night``, ``tomorrow``;
- weekdays: ``last Friday`` (the most recent one before), ``next Friday`` / ``this Friday``
  (the first one after);
- weeks and weekends: ``last week``, ``this week``, ``next week``, ``last weekend``, ``this
  weekend``, ``next weekend`` (named by their Saturday);
- months and years: ``last/this/next month``, ``last/this/next year``;
- distances: ``N days/weeks/months/years ago`` (``a``, number words; "a few days ago" becomes
  "a few days before <date>"), ``the other day``.

Anything else ("recently", "in March") is left as said. Without a time nothing changes.

Example:
    >>> from datetime import datetime
    >>> resolve("I went to a support group yesterday", datetime(2023, 5, 8))
    'I went to a support group on 7 May 2023'
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta

__all__ = ["format_day", "has_relative_date", "resolve"]

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_VAGUE = frozenset({"a couple of", "couple of", "a few", "few", "several"})
_DAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_COUNT = r"(?:a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|\d{1,3})"
_EXPR = re.compile(
    rf"\b(?:(?P<dby>the day before yesterday)|(?P<yesterday>yesterday)|(?P<tomorrow>tomorrow)"
    rf"|(?P<lastnight>last night)|(?P<today>today|tonight|this (?:morning|afternoon|evening))"
    rf"|(?P<rel>last|this|next|past|coming) (?P<unit>week(?:end)?|month|year|{_DAY})"
    rf"|(?P<n>{_COUNT}) (?P<nunit>days?|weeks?|months?|years?) ago"
    rf"|(?P<other>the other day))\b",
    re.I,
)
_PREPOSED = re.compile(r"\b(?:on|in|at|during|over|from|since|by|until|till)\s+$", re.I)


def format_day(d: date) -> str:
    """``7 May 2023``."""
    return f"{d.day} {calendar.month_name[d.month]} {d.year}"


def _month(d: date, delta: int) -> str:
    index = d.year * 12 + d.month - 1 + delta
    return f"{calendar.month_name[index % 12 + 1]} {index // 12}"


def _weekend(d: date, sign: int) -> date:
    """The Saturday of the weekend before (-1), of (0) or after (+1) the week of ``d``.

    On a Saturday or Sunday "this weekend" is the current one; otherwise it (and "next
    weekend") is the coming one, and "last weekend" the one just gone.
    """
    if d.weekday() >= 5:
        current = d - timedelta(days=d.weekday() - 5)
        return current + timedelta(days=7 * sign)
    if sign < 0:
        return d - timedelta(days=d.weekday() + 2)
    return d + timedelta(days=5 - d.weekday())


def _phrase(m: re.Match[str], d: date) -> tuple[str, bool]:
    """(replacement, takes a preposition of its own?) for one matched expression."""
    if m["dby"]:
        return f"on {format_day(d - timedelta(days=2))}", True
    if m["yesterday"]:
        return f"on {format_day(d - timedelta(days=1))}", True
    if m["tomorrow"]:
        return f"on {format_day(d + timedelta(days=1))}", True
    if m["lastnight"]:
        return f"on the night of {format_day(d - timedelta(days=1))}", True
    if m["today"]:
        word = m["today"].lower()
        when = "on the night of" if word == "tonight" else "on"
        return f"{when} {format_day(d)}", True
    if m["other"]:
        return f"a few days before {format_day(d)}", False
    if m["rel"]:
        rel = m["rel"].lower()
        unit = m["unit"].lower()
        sign = -1 if rel in ("last", "past") else (1 if rel in ("next", "coming") else 0)
        if unit == "week":
            word = {-1: "the week before", 0: "the week of", 1: "the week after"}[sign]
            return f"in {word} {format_day(d)}", True
        if unit == "weekend":
            return f"on the weekend of {format_day(_weekend(d, sign))}", True
        if unit == "month":
            return f"in {_month(d, sign)}", True
        if unit == "year":
            return f"in {d.year + sign}", True
        target = _WEEKDAYS.index(unit)
        if sign < 0:
            back = (d.weekday() - target) % 7 or 7
            day = d - timedelta(days=back)
        else:
            ahead = (target - d.weekday()) % 7 or 7
            day = d + timedelta(days=ahead)
        return f"on {calendar.day_name[day.weekday()]}, {format_day(day)}", True
    raw = m["n"].lower()
    unit = m["nunit"].lower().rstrip("s")
    if raw in _VAGUE:  # "a few days ago": no exact date to give
        return f"{m['n']} {unit}s before {format_day(d)}", False
    n = int(raw) if raw.isdigit() else _NUMBERS.get(raw, 1)
    if unit == "day":
        return f"on {format_day(d - timedelta(days=n))}", True
    if unit == "week":
        return f"around {format_day(d - timedelta(weeks=n))}", True
    if unit == "month":
        return f"in {_month(d, -n)}", True
    return f"in {d.year - n}", True


def has_relative_date(text: str) -> bool:
    """True when ``text`` says when relative to its time ("yesterday", "next month")."""
    return _EXPR.search(text) is not None


def resolve(text: str, when: datetime | date | None) -> str:
    """``text`` with its relative dates made absolute against ``when`` (see the module doc)."""
    if when is None or not text:
        return text
    d = when.date() if isinstance(when, datetime) else when
    out: list[str] = []
    last = 0
    for m in _EXPR.finditer(text):
        phrase, has_preposition = _phrase(m, d)
        before = text[last : m.start()]
        if has_preposition and _PREPOSED.search(before):
            phrase = phrase.split(" ", 1)[1]  # "since last year" -> "since 2022"
        out.append(before)
        out.append(phrase)
        last = m.end()
    out.append(text[last:])
    return "".join(out)

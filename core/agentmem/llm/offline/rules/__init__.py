"""The rule table of the offline extractor: first-person clauses -> frames with topic keys.

A *frame* is what one clause says: a rule name, a memory type, the value it states and, for
single-valued attributes only (where the user lives, their editor, how answers should be
formatted), a topic key. A topic key means "a newer statement replaces an older one", so
rules that describe things a person can have many of (hobbies, pets, events) give none.

Topic keys are dotted, lowercase and built from a small table of subject patterns
(``user.residence``, ``user.employer``, ``user.editor``, ``instruction.language`` ...), a
lexicon mapping tools to categories ("emacs" -> ``user.editor``), and a generic fallback on
the subject noun phrase ("my budget is 500 EUR" -> ``user.budget``).

Rules run in order and the first that returns a frame wins: the person's attributes
(:mod:`.person`), tastes and tools (:mod:`.tastes`), instructions, decisions and tasks
(:mod:`.directives`), then other statements (:mod:`.statements`).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..text import clauses, normalise, sentences
from . import directives, person, statements, tastes
from .base import REQUESTS, SKIP, Frame, Rule
from .directives import style_instruction

RULES: tuple[Rule, ...] = (*person.RULES, *tastes.RULES, *directives.RULES, *statements.RULES)


# -- entry points ------------------------------------------------------------------------------
def parse_clause(raw: str) -> Frame | None:
    """The frame of one clause, or None when no rule matches (questions never match)."""
    stripped = raw.strip()
    if not stripped or (stripped.endswith("?") and not REQUESTS.match(stripped)):
        return None
    clause = REQUESTS.sub("", normalise(stripped))
    if len(clause) < 4 or len(clause) > 300:
        return None
    if SKIP.match(clause) and not REQUESTS.match(stripped):
        return None
    first = clause.split(maxsplit=1)[0].lower().rstrip(":,")
    if first not in {
        "i",
        "we",
        "my",
        "our",
        "please",
        "always",
        "never",
        "from",
        "going",
        "in",
        "by",
        "every",
        "each",
        "when",
        "do",
        "don't",
        "stop",
        "avoid",
        "call",
        "you",
        "make",
        "be",
        "remind",
        "keep",
        "use",
        "answer",
        "reply",
        "respond",
        "talk",
        "speak",
        "format",
        "stick",
        "write",
        "remember",
        "add",
        "note",
        "todo",
        "to-do",
        "to",
        "let",
        "the",
        "people",
        "henceforth",
        "at",
        "whenever",
    }:
        return None
    for _name, rx, fn in RULES:
        m = rx.match(clause)
        if m is None:
            continue
        frame = fn(m, clause)
        if frame is not None:
            return frame
    return None


def frames(text: str) -> Iterator[tuple[str, Frame]]:
    """(clause, frame) for every clause of ``text`` that states something."""
    for sentence in sentences(text):
        for clause in clauses(sentence):
            frame = parse_clause(clause)
            if frame is not None:
                yield clause, frame


__all__ = ["RULES", "Frame", "frames", "parse_clause", "style_instruction"]

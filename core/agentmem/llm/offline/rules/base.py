"""The frame a rule returns, the rule registry and helpers shared by the rule modules."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..text import cap, content_words, value_key


@dataclass(frozen=True, slots=True)
class Frame:
    """What one first-person clause states.

    Attributes:
        rule: Name of the rule that matched.
        memory_type: fact, preference, decision, note, event, instruction or task.
        content: The memory as a standalone first-person sentence.
        value: The stated value (for comparisons by the judge).
        topic_key: Set for single-valued attributes only (a newer one supersedes).
        keywords: Search terms for the memory.
        queries: Questions the memory answers.
        polarity: False for negated statements ("I no longer like coffee").
        scope: ``user`` or ``session`` (tasks are session-scoped).
    """

    rule: str
    memory_type: str
    content: str
    value: str
    topic_key: str | None = None
    keywords: tuple[str, ...] = ()
    queries: tuple[str, ...] = ()
    polarity: bool = True
    scope: str = "user"


SKIP = re.compile(
    r"^(?:if|unless|maybe|perhaps|suppose|supposing|imagine|what if|i wonder|i think|i guess|"
    r"i suppose|i feel like|i am not sure|i do not know|i doubt|i hope|i wish|"
    r"i would(?! prefer| rather| like you)|i could|i might|i may|would|could|should i|can i|"
    r"do i|did i|am i|have i|was i|what|where|when(?! (?:you )?(?:answer|reply|respond|writ|"
    r"talk|explain|suggest|review|summari))|why|how|who|which|is it|are you|can you|"
    r"could you|would you|do you|"
    r"did you|will you|have you|tell me|show me|give me|let me know|i am wondering|i said)\b",
    re.I,
)
REQUESTS = re.compile(r"^(?:can|could|would|will) you (?:please )?(?=remind me\b)", re.I)


RuleFn = Callable[[re.Match[str], str], Frame | None]
Rule = tuple[str, re.Pattern[str], RuleFn]


def registrar(table: list[Rule]) -> Callable[[str, str], Callable[[RuleFn], RuleFn]]:
    """A decorator factory adding ``(name, compiled pattern, fn)`` to ``table`` in order."""

    def rule(name: str, pattern: str) -> Callable[[RuleFn], RuleFn]:
        rx = re.compile(pattern, re.I)

        def deco(fn: RuleFn) -> RuleFn:
            table.append((name, rx, fn))
            return fn

        return deco

    return rule


def kw(clause: str, *extra: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for w in (*extra, *content_words(clause)):
        if w and len(w) > 2:
            seen.setdefault(w.lower(), None)
    return tuple(list(seen)[:10])


def with_source(canonical: str, clause: str) -> str:
    if value_key(canonical) == value_key(clause):
        return cap(clause)
    return f"{cap(canonical)} ({cap(clause)})"


def head(phrase: str) -> str:
    """The head of a noun phrase (its last content word), or the verb of "to <verb> ..."."""
    ws = content_words(phrase)
    if not ws:
        return ""
    if phrase.lower().startswith("to "):
        return re.sub(r"[^a-z0-9]+", "_", ws[0]).strip("_")
    return re.sub(r"[^a-z0-9]+", "_", ws[-1]).strip("_")

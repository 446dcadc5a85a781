"""The deterministic offline LLM: rules and embeddings, no network, no model download.

:class:`OfflineLLM` is the default when no Anthropic key is configured. It is honest about
being a heuristic: its :attr:`~OfflineLLM.name` (``offline-heuristic-v1``) is recorded as the
extractor of every memory it extracts.

- **extract**: first-person statements of user turns, matched by the rule table in
  :mod:`agentmem.llm.offline.rules` (facts, preferences, decisions, instructions, tasks, events), with
  topic keys for single-valued attributes, keywords and search queries. Statements outside
  its patterns are not extracted (precision over recall).
- **summarize**: extractive; sentences scored by word frequency (Luhn), a bonus for sentences
  that state something, kept in their original order within the word budget.
- **summary_delta**: an ``append`` delta with an extractive summary and the extracted facts.
- **judge**: SUPERSEDE only when both memories state the same single-valued attribute (same
  topic key from the rules) or the same numeric attribute with another value; else KEEP.
- **answer**: extractive; the memory sentences most similar to the question (embedding
  cosine when an embedder is given, plus word overlap); empty when none is relevant.

Example:
    >>> from agentmem.llm import ChatTurn, OfflineLLM
    >>> llm = OfflineLLM()
    >>> [e.topic_key for e in llm.extract([ChatTurn("user", "I live in Berlin")])]
    ['user.residence']
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..base import Answer, ChatTurn, Extracted, SummaryDelta, Verdict
from . import rules
from .text import content_words, normalise, sentences

if TYPE_CHECKING:
    from ...embeddings import Embedder

#: Recorded as the extractor of every memory this implementation extracts.
OFFLINE_NAME = "offline-heuristic-v1"

#: Minimum relevance (cosine, or word overlap without an embedder) for an extractive answer.
ANSWER_MIN_COSINE = 0.35
ANSWER_MIN_OVERLAP = 0.5
_NUMERIC_COPULA = re.compile(
    r"^(?:the |our |my |your )?(?P<s>[a-z][\w\- ]{2,60}?) (?:is|are|was|were|equals|"
    r"is set to|has been set to|should be) (?P<v>.*\d.*)$",
    re.I,
)


class OfflineLLM:
    """Rule- and embedding-based implementation of the :class:`~agentmem.llm.LLM` protocol.

    Args:
        embedder: Used by :meth:`answer` to rank memory sentences by similarity to the
            question; without one, word overlap alone decides.

    Example:
        >>> llm = OfflineLLM()
        >>> llm.judge("I moved to Lisbon", [("m1", "I live in Berlin")])[0].decision
        'SUPERSEDE'
    """

    def __init__(self, embedder: Embedder | None = None) -> None:
        self._embedder = embedder

    @property
    def name(self) -> str:
        return OFFLINE_NAME

    def __repr__(self) -> str:
        return f"OfflineLLM(name={OFFLINE_NAME!r})"

    # -- extraction ------------------------------------------------------------------------
    def extract(self, turns: Sequence[ChatTurn]) -> list[Extracted]:
        """Memories stated by the user in ``turns`` (other roles are context only)."""
        out: list[Extracted] = []
        seen: set[tuple[str, str]] = set()
        for turn in turns:
            if turn.role != "user":
                continue
            for _clause, frame in rules.frames(turn.content):
                key = (frame.memory_type, frame.content.lower())
                if key in seen:
                    continue
                seen.add(key)
                out.append(
                    Extracted(
                        content=frame.content,
                        memory_type=frame.memory_type,
                        topic_key=frame.topic_key,
                        keywords=frame.keywords,
                        queries=frame.queries,
                        source_ids=(turn.id,) if turn.id else (),
                        scope=frame.scope,
                    )
                )
        return out

    # -- summaries -------------------------------------------------------------------------
    def summarize(self, turns: Sequence[ChatTurn], *, max_words: int = 200) -> str:
        """An extractive summary of at most ``max_words`` words (roles as prefixes)."""
        picked = _pick_sentences(turns, max_words)
        parts: list[str] = []
        last_role = None
        for role, sentence in picked:
            if role != last_role:
                parts.append(f"{role.capitalize()}: {sentence}")
                last_role = role
            else:
                parts.append(sentence)
        return " ".join(parts)

    def summary_delta(self, current: str, turns: Sequence[ChatTurn]) -> SummaryDelta:
        """An ``append`` delta: a short extractive summary plus the facts stated in ``turns``."""
        facts = []
        for e in self.extract(turns):
            if e.topic_key is None:
                continue
            fact: dict[str, str] = {"key": e.topic_key, "value": e.content}
            if e.source_ids:
                fact["source_event"] = e.source_ids[0]
            facts.append(fact)
        budget = max(30, min(120, sum(len(t.content.split()) for t in turns) // 3))
        return SummaryDelta(
            mode="append",
            summary_update=self.summarize(turns, max_words=budget),
            add_facts=tuple(facts),
            add_references=tuple(t.id for t in turns if t.id),
        )

    # -- judge -----------------------------------------------------------------------------
    def judge(self, new: str, candidates: Sequence[tuple[str, str]]) -> list[Verdict]:
        """SUPERSEDE a candidate stating the same single-valued attribute as ``new``."""
        new_frames = _statement_frames(new)
        new_numeric = _numeric(new)
        out: list[Verdict] = []
        for cid, content in candidates:
            decision: str = "KEEP"
            old_frames = _statement_frames(content)
            new_keys = {f.topic_key for f in new_frames if f.topic_key}
            if any(f.topic_key in new_keys for f in old_frames if f.topic_key):
                decision = "SUPERSEDE"
            elif new_numeric is not None:
                old_numeric = _numeric(content)
                if (
                    old_numeric is not None
                    and old_numeric[0] == new_numeric[0]
                    and old_numeric[1] != new_numeric[1]
                ):
                    decision = "SUPERSEDE"
            out.append(Verdict(candidate_id=cid, decision=decision))  # type: ignore[arg-type]
        return out

    # -- answers ---------------------------------------------------------------------------
    def answer(self, question: str, memories: Sequence[tuple[str, str]]) -> Answer:
        """The memory sentences that best answer ``question``; empty when none is relevant."""
        scored: list[tuple[float, int, str, str]] = []  # (score, order, id, sentence)
        q_words = _stems(question)
        units: list[tuple[int, str, str]] = []
        for order, (mid, content) in enumerate(memories):
            for s in sentences(content) or [content]:
                units.append((order, mid, s))
        if not units or not question.strip():
            return Answer(text="")
        cosines = self._cosines(question, [s for _, _, s in units])
        for (order, mid, s), cos in zip(units, cosines, strict=True):
            overlap = len(q_words & _stems(s)) / len(q_words) if q_words else 0.0
            if cos is None:
                relevant = overlap >= ANSWER_MIN_OVERLAP
                score = overlap
            else:
                relevant = cos >= ANSWER_MIN_COSINE or (overlap >= 0.75 and cos >= 0.2)
                score = cos + 0.2 * overlap
            if relevant:
                scored.append((score, order, mid, s))
        if not scored:
            return Answer(text="")
        scored.sort(key=lambda x: (-x[0], x[1]))
        best = scored[0]
        chosen = [best]
        for cand in scored[1:]:
            if len(chosen) == 2:
                break
            if cand[2] != best[2] and cand[0] >= best[0] - 0.05:
                chosen.append(cand)
        text = " ".join(_sentence_end(s) for _, _, _, s in chosen)
        return Answer(text=text, used_ids=tuple(dict.fromkeys(mid for _, _, mid, _ in chosen)))

    def _cosines(self, question: str, texts: list[str]) -> list[float | None]:
        if self._embedder is None:
            return [None] * len(texts)
        q = self._embedder.embed_query(question)
        docs = self._embedder.embed_documents(texts)
        return [float(v) for v in docs @ q]


def _statement_frames(text: str) -> list[rules.Frame]:
    return [f for _, f in rules.frames(text) if f.topic_key]


def _numeric(text: str) -> tuple[str, str] | None:
    """(subject, value) of a statement like "the rate limit is 100 requests per minute"."""
    first = sentences(text)
    if not first:
        return None
    m = _NUMERIC_COPULA.match(normalise(first[0]))
    if m is None:
        return None
    subject = " ".join(content_words(m["s"]))
    if len(subject.split()) < 1:
        return None
    return subject, " ".join(content_words(m["v"]))


def _stems(text: str) -> set[str]:
    out = set()
    for w in content_words(text):
        for suffix in ("ing", "ed", "es", "s"):
            if len(w) > len(suffix) + 2 and w.endswith(suffix):
                w = w[: -len(suffix)]
                break
        out.add(w)
    return out


def _sentence_end(s: str) -> str:
    s = s.strip()
    return s if s.endswith((".", "!", "?", ")")) else s + "."


def _pick_sentences(turns: Sequence[ChatTurn], max_words: int) -> list[tuple[str, str]]:
    """(role, sentence) pairs chosen for a summary, in their original order."""
    items: list[tuple[int, str, str]] = []
    for turn in turns:
        if turn.role == "system":
            continue
        for s in sentences(turn.content):
            items.append((len(items), turn.role, s))
    if not items:
        return []
    total = sum(len(s.split()) for _, _, s in items)
    if total <= max_words:
        return [(r, s) for _, r, s in items]
    freq = Counter(w for _, _, s in items for w in content_words(s))
    top = max(freq.values()) if freq else 1
    scored: list[tuple[float, int]] = []
    for idx, role, s in items:
        ws = content_words(s)
        if not ws:
            continue
        luhn = sum(freq[w] / top for w in ws) / math.sqrt(len(ws))
        states = 0.5 if role == "user" and any(True for _ in rules.frames(s)) else 0.0
        tool = -0.3 if role == "tool" else 0.0
        short = -0.3 if len(ws) < 3 else 0.0
        question = -0.2 if s.rstrip().endswith("?") else 0.0
        scored.append((luhn + states + tool + short + question, idx))
    scored.sort(key=lambda x: (-x[0], x[1]))
    chosen: list[int] = []
    used = 0
    for _, idx in scored:
        n = len(items[idx][2].split())
        if used + n > max_words:
            if used == 0:  # a single long sentence: cut it
                words = items[idx][2].split()[:max_words]
                return [(items[idx][1], " ".join(words) + " …")]
            continue
        chosen.append(idx)
        used += n
    chosen.sort()
    return [(items[i][1], items[i][2]) for i in chosen]

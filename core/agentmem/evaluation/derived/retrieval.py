"""Do derived memories help retrieval? The same conversations stored twice, asked the same.

Built on the public API only (:class:`~agentmem.AgentMemory`, ``bind``, ``add_messages`` /
``ingest``, ``recall``, ``answer``), one fresh store per mode:

- ``add_messages``: every turn stored as a chat message, nothing derived;
- ``ingest``: the same messages through :meth:`~agentmem.BoundMemory.ingest`, which also
  stores the memories the store's LLM extracts, each pointing at its source messages.

One user per conversation, one session per conversation session (``<sample>:s<N>``), each
message with ``metadata = {"dia_id", "speaker", "session"}`` (or the speaker as a leading
``"Name: "`` of the content: :attr:`~.gold.GoldConversation.speaker_in`) and the session's
time plus one second per turn, as :mod:`agentmem.evaluation.locomo` does. Questions (LoCoMo
``qa`` of categories 1-4, and the labelled ``answers`` that have evidence) are asked from a
new session of the conversation's user with ``top_k=20``, ``min_score=0`` and a large token
budget.

**Scoring** at turn granularity, as LoCoMo does: walk the hits in order, collect the turns
each carries (a message: its ``dia_id``; a memory: the dia ids of its source messages), cut
at ``k`` turns; Recall@k is the share of a question's evidence turns among them.

**Answers** (in both stores): for labelled answers, :func:`~.measure.judge_answer`; for LoCoMo
questions, whether the evidence the answer used carries a gold evidence turn
(``grounded``), and the share of the gold answer's words the answer text contains.
"""

from __future__ import annotations

import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from ...embeddings import Embedder
from ...llm.base import LLM
from ...memory import AgentMemory, BoundMemory
from ...models import RecallHit
from ..locomo import hit_dia_ids, ranked_turns, recall_at_k
from .gold import GoldConversation, turn_role
from .measure import judge_answer

__all__ = ["MODES", "RetrievalFigures", "run_retrieval", "session_messages"]

#: How the conversations are stored, in the order they are run.
MODES: tuple[str, ...] = ("add_messages", "ingest")
KS: tuple[int, ...] = (5, 10, 20)
TENANT = "derived-eval"
QUERY_SESSION = "derived-eval-query"
TOP_K = 20
TOKEN_BUDGET = 100_000
_WORD = re.compile(r"[a-z0-9]+")

ProgressFn = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class RetrievalFigures:
    """Recall@k and answer figures per storage mode."""

    modes: Mapping[str, dict[str, Any]]
    questions: int
    rows: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"questions": self.questions, "modes": dict(self.modes)}


def session_messages(conv: GoldConversation, session_index: int) -> list[dict[str, Any]]:
    """The messages of one session as ``add_messages``/``ingest`` take them (role, content,
    ``dia_id``/``speaker``/``session`` metadata, session time plus one second per turn; the
    speaker opens the content instead with ``conv.speaker_in == "content"``)."""
    session = conv.sessions[session_index].session
    out: list[dict[str, Any]] = []
    for i, turn in enumerate(session.turns):
        if not turn.text:
            continue
        role, name = turn_role(conv, turn.speaker)
        content, speaker = conv.spoken(turn.text, name)
        meta: dict[str, Any] = {"dia_id": turn.dia_id, "session": session.number}
        if speaker is not None:
            meta["speaker"] = speaker
        out.append(
            {
                "role": role,
                "content": content,
                "metadata": meta,
                "event_time": None
                if session.start is None
                else session.start + timedelta(seconds=i),
            }
        )
    return out


def _store(
    mem: AgentMemory, convs: Sequence[GoldConversation], mode: str, progress: ProgressFn | None
) -> tuple[dict[str, str], int, float]:
    """Store every conversation; (message id -> dia id, memories created, seconds)."""
    dia_of: dict[str, str] = {}
    created = 0
    started = time.perf_counter()
    total = sum(len(c.sessions) for c in convs)
    done = 0
    for conv in convs:
        for n, gs in enumerate(conv.sessions):
            messages = session_messages(conv, n)
            done += 1
            if not messages:
                continue
            m = mem.bind(
                TENANT, user_id=conv.sample_id, session_id=f"{conv.sample_id}:s{gs.number}"
            )
            if mode == "ingest":
                result = m.ingest(messages)
                created += result.memories_created
                ids = list(result.message_ids)
            else:
                ids = [item.id for item in m.add_messages(messages)]
            for mid, msg in zip(ids, messages, strict=True):
                dia_of[mid] = msg["metadata"]["dia_id"]
            if progress is not None:
                progress(f"store ({mode})", done, total)
    mem.flush()
    return dia_of, created, time.perf_counter() - started


def _turns_of(hit: RecallHit, dia_of: Mapping[str, str]) -> list[str]:
    dias = hit_dia_ids(hit.metadata)
    if dias:
        return dias
    sources = hit.metadata.get("source_message_ids") or []
    return [dia_of[s] for s in sources if isinstance(s, str) and s in dia_of]


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _questions(conv: GoldConversation) -> list[tuple[str, tuple[str, ...], Any, str]]:
    """(question, evidence, gold answer or labelled answer index, source) to ask."""
    out: list[tuple[str, tuple[str, ...], Any, str]] = []
    for q in conv.conversation.questions:
        out.append((q.question, q.evidence, q.answer, "locomo"))
    for i, a in enumerate(conv.answers):
        out.append((a.question, a.evidence, i, "labelled"))
    return out


def _ask(
    m: BoundMemory,
    conv: GoldConversation,
    dia_of: Mapping[str, str],
    question: str,
    evidence: tuple[str, ...],
    gold: Any,
    source: str,
) -> dict[str, Any]:
    row: dict[str, Any] = {"sample_id": conv.sample_id, "question": question, "source": source}
    if evidence:
        hits = m.recall(question, top_k=TOP_K, min_score=0.0, token_budget=TOKEN_BUDGET).items
        ranked = ranked_turns((_turns_of(h, dia_of) for h in hits), limit=max(KS))
        row.update({f"recall@{k}": recall_at_k(ranked, evidence, k) for k in KS})
    reply = m.answer(question)
    used_turns = {d for h in reply.sources if h.id in reply.used_ids for d in _turns_of(h, dia_of)}
    row["answer"] = reply.text
    if source == "labelled":
        qa = conv.answers[int(gold)]
        problem = judge_answer(question, reply.text, qa.expect, qa.avoid, qa.none)
        row["answer_ok"] = problem is None
        row["answer_problem"] = problem
    else:
        gold_words = _words(str(gold)) if gold is not None else set()
        row["grounded"] = bool(used_turns & set(evidence))
        row["answer_word_recall"] = (
            len(gold_words & _words(reply.text)) / len(gold_words) if gold_words else 0.0
        )
        row["answer_is_question"] = _words(reply.text) == _words(question) and bool(reply.text)
    return row


def _aggregate(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in rows if "recall@10" in r]
    out: dict[str, Any] = {"questions": len(scored)}
    for k in KS:
        out[f"recall@{k}"] = (
            round(statistics.fmean(r[f"recall@{k}"] for r in scored), 4) if scored else 0.0
        )
    locomo = [r for r in rows if r["source"] == "locomo"]
    if locomo:
        out["answers_grounded"] = round(statistics.fmean(r["grounded"] for r in locomo), 4)
        out["answer_word_recall"] = round(
            statistics.fmean(r["answer_word_recall"] for r in locomo), 4
        )
        out["answers_empty"] = round(statistics.fmean(not r["answer"] for r in locomo), 4)
    labelled = [r for r in rows if r["source"] == "labelled"]
    if labelled:
        out["labelled_answers"] = len(labelled)
        out["labelled_answers_right"] = sum(r["answer_ok"] for r in labelled)
    return out


def run_retrieval(
    convs: Sequence[GoldConversation],
    *,
    embedder: Embedder | None = None,
    llm: LLM | None = None,
    home: str | os.PathLike[str] | None = None,
    modes: Sequence[str] = MODES,
    limit_questions: int | None = None,
    progress: ProgressFn | None = None,
) -> RetrievalFigures:
    """Store ``convs`` once per mode and ask every question (see the module docstring).

    Args:
        embedder: Shared by the stores (and so by both modes' vectors).
        llm: The stores' LLM (default: the offline one, as without an API key).
        home: Keep the stores under this directory (``<home>/<mode>``) instead of a
            temporary one.
        limit_questions: Ask at most this many questions per conversation.
    """
    from ...llm.offline import OfflineLLM

    model = llm if llm is not None else OfflineLLM(embedder)
    modes_out: dict[str, dict[str, Any]] = {}
    all_rows: list[dict[str, Any]] = []
    questions = 0
    with tempfile.TemporaryDirectory(prefix="agentmem-derived-") as tmp:
        root = Path(home) if home is not None else Path(tmp)
        for mode in modes:
            mem = AgentMemory(root / mode, embedder=embedder, llm=model)
            try:
                dia_of, created, store_s = _store(mem, convs, mode, progress)
                rows: list[dict[str, Any]] = []
                for conv in convs:
                    asked = _questions(conv)[:limit_questions]
                    m = mem.bind(TENANT, user_id=conv.sample_id, session_id=QUERY_SESSION)
                    for i, (q, ev, gold, source) in enumerate(asked):
                        row = _ask(m, conv, dia_of, q, ev, gold, source)
                        row["mode"] = mode
                        rows.append(row)
                        if progress is not None:
                            progress(f"ask ({mode})", i + 1, len(asked))
                summary = _aggregate(rows)
                summary["memories_created"] = created
                summary["store_seconds"] = round(store_s, 2)
                modes_out[mode] = summary
                questions = max(questions, summary["questions"])
                all_rows.extend(rows)
            finally:
                mem.close()
    return RetrievalFigures(modes_out, questions, tuple(all_rows))

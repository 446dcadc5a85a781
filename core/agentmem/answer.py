"""``answer()``: a grounded answer from the top recalled memories (seed 002 synthesis).

The question is recalled with the bound identity's default scopes; the hits go to the
store's LLM (:meth:`~agentmem.llm.LLM.answer`), which may only use them and returns the ids
it used. Nothing recalled means an empty answer, without an LLM call.

A raw chat message from which a since-superseded memory was derived is not offered as
evidence (it states something outdated: "I live in Berlin" after "I moved to Lisbon"; its
other, still live memories are offered as memories); it stays in the transcript and in
``recall``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import validation as v
from .indexer import index_text, speaker_of
from .models import AnswerResult, RecallHit

if TYPE_CHECKING:
    from .memory import BoundMemory

#: Kinds offered first (derived knowledge before raw transcript).
_PREFERRED_KINDS = ("memory", "summary")


def answer(m: BoundMemory, question: str, *, top_k: int = 5) -> AnswerResult:
    """See the module docstring; called by :meth:`BoundMemory.answer`."""
    q = v.query(question, "question")
    llm = m.store.llm
    hits = list(m.recall(q, top_k=top_k).items)
    hits = [h for h in hits if h.id not in _outdated_messages(m, hits)]
    if not hits:
        return AnswerResult(text="", answered_by=llm.name)
    hits.sort(key=lambda h: (h.kind not in _PREFERRED_KINDS, -h.score))
    # a chat message goes with its speaker ("Maria: I met Jean"), as the indexes see it
    reply = llm.answer(q, [(h.id, index_text(h.content, speaker_of(h.metadata))) for h in hits])
    offered = {h.id for h in hits}
    used = tuple(i for i in reply.used_ids if i in offered)
    text = reply.text.strip() if used or not offered else ""
    return AnswerResult(
        text=text, used_ids=used if text else (), sources=tuple(hits), answered_by=llm.name
    )


def _outdated_messages(m: BoundMemory, hits: list[RecallHit]) -> set[str]:
    """Chat-message hits from which a now superseded memory was derived."""
    message_ids = [h.id for h in hits if h.kind == "chat_message"]
    if not message_ids:
        return set()
    marks = ",".join("?" * len(message_ids))
    rows = m.store.records.read(
        "SELECT s.value, MAX(mem.superseded_by IS NOT NULL) FROM memories AS mem, "
        "json_each(mem.metadata, '$.source_message_ids') AS s "
        f"WHERE mem.tenant_id = ? AND mem.kind = 'memory' AND s.value IN ({marks}) "
        "AND mem.deleted_at IS NULL AND mem.anonymized_at IS NULL GROUP BY s.value",
        (m.tenant_id, *message_ids),
    )
    return {r[0] for r in rows if r[1]}

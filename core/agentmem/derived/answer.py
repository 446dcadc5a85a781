"""``answer()``: a grounded answer from the top recalled memories.

The question is recalled with the bound identity's default scopes; the hits go to the
store's LLM (:meth:`~agentmem.llm.LLM.answer`), which may only use them and returns the ids
it used. Nothing recalled means an empty answer, without an LLM call.

A raw chat message from which a since-superseded memory was derived is not offered as
evidence (it states something outdated: "I live in Berlin" after "I moved to Lisbon"; its
other, still live memories are offered as memories); it stays in the transcript and in
``recall``. Nor is the question itself: a stored chat message saying exactly the question
(the message being answered, or the same words asked before) is no evidence for its answer.
"""

from __future__ import annotations

from .. import validation
from ..config import MAX_TOP_K
from ..context import StoreContext
from ..models import AnswerResult, Identity
from ..recall.api import recall
from ..speakers import metadata_speaker
from ..write.index_text import index_text

#: Kinds offered first (derived knowledge before raw transcript).
_PREFERRED_KINDS = ("memory", "summary")


def answer(ctx: StoreContext, identity: Identity, question: str, *, top_k: int = 5) -> AnswerResult:
    """See the module docstring; called by :meth:`BoundMemory.answer`."""
    q = validation.query(question, "question")
    llm = ctx.llm
    asked = q.strip()
    found = recall(ctx, identity, q, top_k=min(top_k + 1, MAX_TOP_K)).items
    hits = [h for h in found if not (h.kind == "chat_message" and h.content.strip() == asked)]
    hits = hits[:top_k]
    outdated = ctx.records.supersession.outdated_message_ids(
        identity.tenant_id, [h.id for h in hits if h.kind == "chat_message"]
    )
    hits = [h for h in hits if h.id not in outdated]
    if not hits:
        return AnswerResult(text="", answered_by=llm.name)
    hits.sort(key=lambda h: (h.kind not in _PREFERRED_KINDS, -h.score))
    # a chat message goes with its speaker ("Maria: I met Jean"), as the indexes see it
    reply = llm.answer(
        q, [(h.id, index_text(h.content, metadata_speaker(h.metadata))) for h in hits]
    )
    offered = {h.id for h in hits}
    used = tuple(i for i in reply.used_ids if i in offered)
    text = reply.text.strip() if used or not offered else ""
    return AnswerResult(
        text=text, used_ids=used if text else (), sources=tuple(hits), answered_by=llm.name
    )

"""Working memory (the first memory tier): what a model sees of a session.

A session's working memory is

- **pinned messages**: ``system`` messages and messages stored with ``metadata={"pinned":
  true}`` (system prompt, identity files). Never compacted, always first in the prompt.
- **the window**: the session's other messages and tool outputs that have not rolled off.
- **the reference summary**: a structured document (``summary``, ``facts``
  ``[{key, value, source_event}]``, ``referenced_sessions``, ``referenced_events``) of what
  rolled off, updated only through the LLM's structured deltas (``summary_delta``).

**Compaction** folds the oldest compactable window messages into the reference summary. It
never folds pinned messages or the latest user message (the one being answered). It runs

- automatically in :meth:`WorkingMemory.context_messages`: when pinned + summary + window pass
  ``budget_ratio`` (80%) of the model window, everything but a short tail (``working_tail``,
  4 messages) rolls off (compressed mode); older content is then reached through ``recall``. When the
  window holds more than ``working_max_messages`` (50), the oldest roll off until
  half remain.
- manually with :meth:`WorkingMemory.compact` (``BoundMemory.compact``).

A delta is validated completely before anything changes, and the new state is swapped in with
one compare-and-set write: an LLM error, a malformed delta or a concurrent compaction leave the
previous summary and window intact (the error is recorded, the next trigger retries). If the
prompt is still over budget then, :meth:`~WorkingMemory.context_messages` trims its *view*
(oldest first, never the latest user message) without changing the stored state.

**Persistence**: the state (summary, window boundary, counters) is a row of the records store's
``working_state`` table; the window itself is rebuilt from the session's messages, so a
restarted process sees the same working memory.

Example:
    >>> m = mem.bind("acme", user_id="u1", session_id="s1")  # doctest: +SKIP
    >>> m.add_message("system", "You are a helpful travel agent.")  # doctest: +SKIP
    >>> m.add_message("user", "Book me a flight to Lisbon")  # doctest: +SKIP
    >>> m.context_messages(model_window=8000)  # doctest: +SKIP
    [{'role': 'system', 'content': 'You are a helpful travel agent.'},
     {'role': 'user', 'content': 'Book me a flight to Lisbon'}]
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .. import scopes as scope_rules
from .. import tool_calls, validation
from ..config import TierConfig
from ..context import StoreContext
from ..errors import StorageError, ValidationError
from ..models import Identity, MemoryItem
from ..results import SUMMARY_HEADER as SUMMARY_HEADER  # re-exported: they lived here
from ..results import CompactionResult as CompactionResult
from ..results import PromptView as PromptView
from ..results import ReferenceFact as ReferenceFact
from ..results import ReferenceSummary as ReferenceSummary
from ..results import TokenCounts as TokenCounts
from ..results import WorkingSnapshot as WorkingSnapshot
from ..tokens import count_tokens

if TYPE_CHECKING:
    from ..llm.base import LLM, ChatTurn

log = logging.getLogger("agentmem.tiers.working")

#: Tokens a chat message costs beyond its content (role and separators, OpenAI-style).
MESSAGE_OVERHEAD_TOKENS = 4
#: Facts and references kept in a reference summary at most (oldest dropped first).
MAX_FACTS = 200
MAX_REFERENCES = 1000
#: Messages handed to one ``summary_delta`` call; a longer roll-off is folded in batches.
MAX_DELTA_MESSAGES = 64


# -- the reference summary (its types live in agentmem.results) ------------------------------
class MalformedDeltaError(ValueError):
    """A summary delta that cannot be applied (the summary stays as it was)."""


def apply_delta(current: ReferenceSummary, delta: Any) -> ReferenceSummary:
    """The summary after ``delta`` (a :class:`~agentmem.llm.SummaryDelta`), validated first.

    Raises:
        MalformedDeltaError: anything about the delta is off; nothing is applied then.
    """
    from ..llm.base import SummaryDelta

    if not isinstance(delta, SummaryDelta):
        raise MalformedDeltaError(f"expected a SummaryDelta, got {type(delta).__name__}")
    if delta.mode not in ("append", "overwrite"):
        raise MalformedDeltaError(f"mode must be 'append' or 'overwrite', got {delta.mode!r}")
    if not isinstance(delta.summary_update, str):
        raise MalformedDeltaError("summary_update must be a string")
    if delta.mode == "overwrite" and not delta.summary_update.strip():
        raise MalformedDeltaError("an overwrite delta must carry a summary")
    added: list[ReferenceFact] = []
    for n, fact in enumerate(_seq(delta.add_facts, "add_facts")):
        if not isinstance(fact, Mapping):
            raise MalformedDeltaError(f"add_facts[{n}] must be an object")
        key, value, source = fact.get("key"), fact.get("value"), fact.get("source_event")
        if not isinstance(key, str) or not key.strip():
            raise MalformedDeltaError(f"add_facts[{n}].key must be a non-empty string")
        if not isinstance(value, str | int | float | bool) or (
            isinstance(value, str) and not value
        ):
            raise MalformedDeltaError(f"add_facts[{n}].value must be a non-empty scalar")
        if source is not None and not isinstance(source, str):
            raise MalformedDeltaError(f"add_facts[{n}].source_event must be a string")
        added.append(ReferenceFact(key.strip(), str(value), source))
    removed = set(_strings(delta.remove_fact_keys, "remove_fact_keys"))
    add_refs = _strings(delta.add_references, "add_references")
    remove_refs = set(_strings(delta.remove_references, "remove_references"))

    update = delta.summary_update.strip()
    if delta.mode == "overwrite":
        text = update
    else:
        text = f"{current.summary}\n{update}".strip() if update else current.summary
    facts = {f.key: f for f in current.facts if f.key not in removed}
    for fact in added:
        facts.pop(fact.key, None)  # re-inserted last: newest facts at the end
        facts[fact.key] = fact
    sessions = [s for s in current.referenced_sessions if s not in remove_refs]
    events = [e for e in current.referenced_events if e not in remove_refs]
    for ref in add_refs:
        if ref.startswith("session:"):
            if ref[8:] not in sessions:
                sessions.append(ref[8:])
        elif ref not in events:
            events.append(ref)
    return ReferenceSummary(
        summary=text,
        facts=tuple(facts.values())[-MAX_FACTS:],
        referenced_sessions=tuple(sessions[-MAX_REFERENCES:]),
        referenced_events=tuple(events[-MAX_REFERENCES:]),
    )


def _seq(value: Any, name: str) -> Sequence[Any]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise MalformedDeltaError(f"{name} must be a list")
    return value


def _strings(value: Any, name: str) -> list[str]:
    out = []
    for n, item in enumerate(_seq(value, name)):
        if not isinstance(item, str) or not item:
            raise MalformedDeltaError(f"{name}[{n}] must be a non-empty string")
        out.append(item)
    return out


# -- value objects ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _State:
    summary: ReferenceSummary
    boundary: int = 0
    held: tuple[int, ...] = ()
    version: int = 0
    compactions: int = 0
    trips: int = 0
    last_error: str | None = None


def is_pinned(item: MemoryItem) -> bool:
    """System messages and messages with ``metadata["pinned"] is True`` are never compacted."""
    return item.role == "system" or (item.metadata or {}).get("pinned") is True


def message_tokens(item: MemoryItem) -> int:
    """What ``item`` costs in a prompt: its content, its tool calls, the overhead."""
    calls = tool_calls.stored_tool_calls(item.metadata) if _role(item) == "assistant" else ()
    extra = count_tokens(json.dumps(tool_calls.openai_tool_calls(calls))) if calls else 0
    return count_tokens(item.content) + extra + MESSAGE_OVERHEAD_TOKENS


# -- the manager ------------------------------------------------------------------------------
class WorkingMemory:
    """The working memory of a bound session (``m.working``).

    Example:
        >>> w = m.working  # doctest: +SKIP
        >>> w.window[-1].content, w.tokens.total  # doctest: +SKIP
        ('Book me a flight to Lisbon', 14)
        >>> w.compact().rolled_off  # doctest: +SKIP
        ()
    """

    def __init__(self, ctx: StoreContext, identity: Identity) -> None:
        self._ctx = ctx
        self._identity = identity

    @property
    def _key(self) -> tuple[str, str, str]:
        """(tenant, partition, session) of the working state. A memory bound without a
        session has none: its first read or write raises ScopeError (as ``state`` does
        without an agent), not the property, which ``isinstance`` checks of the protocols
        read."""
        identity = self._identity
        scope_rules.require(identity, "session")
        assert identity.session_id is not None
        return (
            identity.tenant_id,
            scope_rules.home_partition(identity, "session"),
            identity.session_id,
        )

    @property
    def config(self) -> TierConfig:
        """The store's tier settings (an embedded memory's only: a remote one's are the
        server's, which it does not send)."""
        return self._ctx.settings.tiers

    # -- reads ---------------------------------------------------------------------------------
    @property
    def window(self) -> list[MemoryItem]:
        """Messages in the window (not pinned, not rolled off), oldest first."""
        return list(self.snapshot().window)

    @property
    def pinned(self) -> list[MemoryItem]:
        return list(self.snapshot().pinned)

    @property
    def summary(self) -> ReferenceSummary:
        """The reference summary of what rolled off."""
        return self._load().summary

    @property
    def tokens(self) -> TokenCounts:
        return self.snapshot().tokens

    def snapshot(self) -> WorkingSnapshot:
        """Pinned messages, window, summary and token counts, read together."""
        self._ctx.check_open()
        state = self._load()
        pinned, window, latest_user = self._rows(state)
        summary_tokens = 0 if state.summary.empty else count_tokens(state.summary.render()) + 4
        latest = next((item.id for seq, item in window if seq == latest_user), None)
        return WorkingSnapshot(
            session_id=self._key[2],
            pinned=tuple(item for _, item in pinned),
            window=tuple(item for _, item in window),
            summary=state.summary,
            tokens=TokenCounts(
                pinned=sum(message_tokens(item) for _, item in pinned),
                summary=summary_tokens,
                window=sum(message_tokens(item) for _, item in window),
            ),
            compactions=state.compactions,
            trips=state.trips,
            last_error=state.last_error,
            latest_user_id=latest,
        )

    def _load(self) -> _State:
        row = self._ctx.records.working.load(*self._key)
        if row is None:
            return _State(ReferenceSummary())
        return _State(
            summary=ReferenceSummary.from_dict(row.summary),
            boundary=row.boundary,
            held=row.held,
            version=row.version,
            compactions=row.compactions,
            trips=row.trips,
            last_error=row.last_error,
        )

    def _rows(
        self, state: _State
    ) -> tuple[list[tuple[int, MemoryItem]], list[tuple[int, MemoryItem]], int | None]:
        """(pinned, window, seq of the latest user message) of the session."""
        rows, latest = self._ctx.records.working.window_rows(
            *self._key, boundary=state.boundary, held=state.held
        )
        pinned: list[tuple[int, MemoryItem]] = []
        window: list[tuple[int, MemoryItem]] = []
        for seq, row in rows:
            item = row.item
            if is_pinned(item):
                pinned.append((seq, item))
            elif seq > state.boundary or seq in state.held:
                window.append((seq, item))
        return pinned, window, latest

    # -- compaction ----------------------------------------------------------------------------
    def compact(self, *, keep: int | None = None) -> CompactionResult:
        """Fold the window into the reference summary, keeping the last ``keep`` messages
        (default ``working_tail``, 4) and the latest user message.
        """
        if keep is None:
            return self._compact(self.config.working_tail, "manual")
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ValidationError("keep", f"must be a non-negative integer; got {keep!r}")
        return self._compact(keep, "manual")

    def _compact(self, tail: int, reason: str) -> CompactionResult:
        """:meth:`compact` keeping ``tail`` messages, for ``reason`` (``manual``, ``budget``,
        ``window_full``)."""
        self._ctx.check_open()
        state = self._load()
        _, window, latest_user = self._rows(state)
        candidates = window[: len(window) - tail] if tail else window
        rolling = {seq for seq, _ in candidates if seq != latest_user}
        for group in tool_exchanges([item for _, item in window]):
            seqs = {window[i][0] for i in group}
            if not seqs <= rolling:  # a tool call stays with its results, or rolls with them
                rolling -= seqs
        roll = [(seq, item) for seq, item in window if seq in rolling]
        if not roll:
            return CompactionResult(
                ok=True, reason=reason, window=len(window), summary=state.summary
            )
        llm: LLM = self._ctx.llm
        summary = state.summary
        try:  # one delta per batch, all applied to a copy: one failure and nothing changes
            for start in range(0, len(roll), MAX_DELTA_MESSAGES):
                batch = roll[start : start + MAX_DELTA_MESSAGES]
                delta = llm.summary_delta(summary.summary, [_turn(item) for _, item in batch])
                summary = self._condense(apply_delta(summary, delta), llm)
        except Exception as exc:  # an LLM error or a malformed delta
            return self._failed(state, reason, len(window), exc)
        rolled = {seq for seq, _ in roll}
        boundary = max(state.boundary, max(rolled))
        held = tuple(seq for seq, _ in window if seq not in rolled and seq <= boundary)
        if not self._save(state, summary, boundary, held, trip=reason == "budget"):
            return self._failed(
                state, reason, len(window), RuntimeError("another compaction changed the state")
            )
        log.info(
            json.dumps({"event": "working_compaction", "reason": reason, "rolled_off": len(roll)})
        )
        return CompactionResult(
            ok=True,
            reason=reason,
            rolled_off=tuple(item.id for _, item in roll),
            window=len(window) - len(roll),
            summary=summary,
        )

    def _condense(self, summary: ReferenceSummary, llm: LLM) -> ReferenceSummary:
        return _condense(summary, llm, self.config.reference_max_words)

    def _failed(
        self, state: _State, reason: str, window: int, exc: BaseException
    ) -> CompactionResult:
        error = f"{type(exc).__name__}: {exc}"[:500]
        log.warning(json.dumps({"event": "working_compaction_failed", "error": error}))
        self._ctx.records.working.record_error(*self._key, state.summary.to_dict(), error)
        return CompactionResult(
            ok=False, reason=reason, window=window, summary=state.summary, error=error
        )

    def _save(
        self,
        state: _State,
        summary: ReferenceSummary,
        boundary: int,
        held: tuple[int, ...],
        *,
        trip: bool,
    ) -> bool:
        """Compare-and-set the new state; False when another compaction got there first."""
        return self._ctx.records.working.save(
            *self._key,
            expected_version=state.version,
            summary=summary.to_dict(),
            boundary=boundary,
            held=held,
            trip=trip,
        )

    # -- the prompt ----------------------------------------------------------------------------
    def context_messages(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> list[dict[str, Any]]:
        """The messages to send to a model: pinned messages, the reference summary (a system
        message) and the window, compacting first when the budget or the window size trips.
        Compaction and trimming keep an assistant message that calls tools together with the
        results of those calls (both in the prompt, or both folded away).

        Args:
            model_window: The model's context window in tokens (default from
                :class:`~agentmem.tiers.sessions.TierConfig`; ``AGENTMEM_MODEL_WINDOW_OVERRIDE`` wins).
            budget_ratio: Share of the model window the prompt may fill before compaction
                trips (default 0.8).
            max_messages: Window messages past which the oldest roll off until half remain
                (default ``working_max_messages`` of the tier config, 50).

        Returns:
            ``{"role", "content"}`` dicts in prompt order, in the OpenAI chat format: an
            assistant message that called tools (``metadata["tool_calls"]``, see
            :mod:`agentmem.tool_calls`) also carries ``tool_calls``, ``[{"id", "type":
            "function", "function": {"name", "arguments"}}]`` with the arguments as JSON
            text, and a tool result ``tool_call_id`` when it was stored. LangChain's
            ``convert_to_messages`` turns them into its messages as they are.
        """
        view = self.prompt_view(
            model_window=model_window, budget_ratio=budget_ratio, max_messages=max_messages
        )
        head = [_message(item) for item in view.pinned]
        if not view.summary.empty:
            head.append({"role": "system", "content": view.summary.render()})
        return head + [_message(item) for item in view.window]

    def prompt_view(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> PromptView:
        """What a prompt of this session holds, as stored rows: compacts first when the
        budget or the window size trips, exactly as :meth:`context_messages` (which renders
        this view), for callers that build the prompt from their own message objects.

        Args: as :meth:`context_messages`.
        """
        window_tokens = self._model_window(model_window)
        ratio = validation.unit_float(budget_ratio, "budget_ratio")
        if ratio is None or ratio <= 0:
            raise ValidationError("budget_ratio", "must be in (0, 1]")
        cfg = self.config
        limit = validation.positive_int(max_messages, "max_messages")
        limit = cfg.working_max_messages if limit is None else limit
        budget = int(window_tokens * ratio)
        snap = self.snapshot()
        result: CompactionResult | None = None
        if snap.tokens.total > budget:
            result = self._compact(cfg.working_tail, "budget")
        elif len(snap.window) > limit:
            result = self._compact(max(limit // 2, cfg.working_tail), "window_full")
        if result is not None and result.rolled_off:
            snap = self.snapshot()
        return self._view(snap, budget, result)

    def _model_window(self, model_window: int | None) -> int:
        override = self.config.model_window_override
        if override is not None:
            return override
        value = validation.positive_int(model_window, "model_window")
        return value if value is not None else self.config.model_window

    @staticmethod
    def _view(snap: WorkingSnapshot, budget: int, result: CompactionResult | None) -> PromptView:
        used = snap.tokens.pinned + (0 if snap.summary.empty else snap.tokens.summary)
        window = list(snap.window)
        sizes = [message_tokens(item) for item in window]
        # over budget even now (a failed compaction, or a huge tail): trim the view only,
        # oldest first, a tool call together with its results
        total = used + sum(sizes)
        trimmed: set[int] = set()
        for group in tool_exchanges(window):
            if total <= budget:
                break
            if any(window[i].id == snap.latest_user_id for i in group):
                continue
            trimmed.update(group)
            total -= sum(sizes[i] for i in group)
        shown = [item for i, item in enumerate(window) if i not in trimmed]
        if len(shown) < len(window):
            log.warning(
                "working memory over budget after compaction: %d oldest messages left out "
                "of the prompt view",
                len(window) - len(shown),
            )
        return PromptView(
            pinned=snap.pinned,
            summary=snap.summary,
            window=tuple(shown),
            left_out=len(window) - len(shown),
            compaction=result,
        )


def _condense(summary: ReferenceSummary, llm: LLM, limit: int) -> ReferenceSummary:
    """A summary past ``limit`` words rewritten shorter by the LLM (kept on error)."""
    if len(summary.summary.split()) <= limit:
        return summary
    from ..llm.base import ChatTurn

    try:
        text = llm.summarize([ChatTurn("system", summary.summary)], max_words=limit)
    except Exception as exc:
        log.warning("reference summary not condensed: %s", exc)
        return summary
    if not isinstance(text, str) or not text.strip():
        return summary
    return replace(summary, summary=text.strip().removeprefix("System: "))


def rebuild_reference(
    ctx: StoreContext, tenant_id: str, partition: str, session_id: str, *, attempts: int = 5
) -> bool:
    """Write a session's reference summary again from the rolled-off messages it still has.

    Called after one of them was forgotten or erased: the old summary may quote it. The new
    one is folded from scratch by the store's LLM; if that fails, the summary is left empty
    (the error is recorded) rather than keep what it quoted. Window and counters stay.
    Returns False when the session has no working-memory state.
    """
    for _ in range(attempts):
        row = ctx.records.working.load(tenant_id, partition, session_id)
        if row is None:
            return False
        rolled = [
            r.item
            for seq, r in ctx.records.conversations.session_items(tenant_id, partition, session_id)
            if seq <= row.boundary and seq not in row.held and not is_pinned(r.item)
        ]
        summary = ReferenceSummary()
        error: str | None = None
        if rolled:
            llm: LLM = ctx.llm
            try:
                for start in range(0, len(rolled), MAX_DELTA_MESSAGES):
                    batch = rolled[start : start + MAX_DELTA_MESSAGES]
                    delta = llm.summary_delta(summary.summary, [_turn(i) for i in batch])
                    summary = _condense(
                        apply_delta(summary, delta), llm, ctx.settings.tiers.reference_max_words
                    )
            except Exception as exc:  # an LLM error or a malformed delta: no summary at all
                summary = ReferenceSummary()
                error = f"reference summary dropped, rebuild failed: {type(exc).__name__}: {exc}"
                error = error[:500]
                log.warning(json.dumps({"event": "working_rebuild_failed", "error": error}))
        if ctx.records.working.rewrite_summary(
            tenant_id,
            partition,
            session_id,
            expected_version=row.version,
            summary=summary.to_dict(),
            error=error,
        ):
            return True
    raise StorageError(
        "the reference summary kept changing while it was rebuilt; retry", session_id=session_id
    )


def tool_exchanges(window: Sequence[MemoryItem]) -> list[list[int]]:
    """``window``'s positions in groups that a prompt shows or leaves out together, oldest
    first: an assistant message that calls tools with the results of those calls (a chat API
    rejects a tool result without its call, and a call without its results), every other
    message alone."""
    groups: list[list[int]] = []
    caller: dict[str, list[int]] = {}
    for n, item in enumerate(window):
        call_id = tool_calls.result_call_id(item.metadata) if _role(item) == "tool" else None
        if call_id is not None and call_id in caller:
            caller.pop(call_id).append(n)  # one result per call: a second one stands alone
            continue
        group = [n]
        groups.append(group)
        if _role(item) == "assistant":
            for call in tool_calls.stored_tool_calls(item.metadata):
                if call.id is not None:
                    caller[call.id] = group
    return groups


def _role(item: MemoryItem) -> str:
    return item.role or ("tool" if item.kind == "tool_output" else "user")


def _message(item: MemoryItem) -> dict[str, Any]:
    role = _role(item)
    out: dict[str, Any] = {"role": role, "content": item.content}
    if role == "assistant" and (calls := tool_calls.stored_tool_calls(item.metadata)):
        out["tool_calls"] = tool_calls.openai_tool_calls(calls)
    call_id = tool_calls.result_call_id(item.metadata)
    if role == "tool" and call_id is not None:
        out["tool_call_id"] = call_id
    return out


def _turn(item: MemoryItem) -> ChatTurn:
    from ..llm.base import chat_turn

    return chat_turn(item)

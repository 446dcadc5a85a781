"""The LLM protocol on Anthropic's Messages API, through the official ``anthropic`` SDK.

Every task is one Messages call with one tool whose ``input_schema`` is the task's result,
forced with ``tool_choice`` so the reply is structured. The reply's tool input is then
validated here, field by field: a reply that does not fit the schema is asked for once more
(``malformed_retries``) and then raised as :class:`~agentmem.errors.LLMError` with the raw
reply in ``error.context["raw"]``, never turned into an empty result.

Transport failures (429, 5xx, connection errors, timeouts) are retried by the SDK with
exponential backoff (``max_retries``, honouring ``retry-after``); after the last retry they
become :class:`~agentmem.errors.LLMError` too. The ``anthropic`` package is imported on first
use, so agentmem works without it when the offline LLM is used.

Example:
    >>> llm = AnthropicLLM(model="claude-haiku-4-5")  # doctest: +SKIP
    >>> llm.extract([ChatTurn("user", "I live in Berlin", id="m1")])  # doctest: +SKIP
    [Extracted(content='The user lives in Berlin.', memory_type='fact', topic_key='user.residence', ...)]
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC
from typing import Any

from ..config import LLMConfig
from ..distribution import pip_install
from ..errors import LLMError
from ..models import MEMORY_TYPES
from ..speakers import resolve_speaker
from .base import Answer, ChatTurn, Extracted, SummaryDelta, Verdict

log = logging.getLogger("agentmem.llm")

DEFAULT_MODEL = "claude-haiku-4-5"
#: Characters of a raw reply kept on an error for inspection.
RAW_REPLY_CHARS = 20_000
_SCOPES = ("user", "agent", "session")


class _Malformed(Exception):
    """A tool reply that does not fit the task's schema (internal; becomes LLMError)."""


def _schema_string_list() -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}}


TOOLS: dict[str, dict[str, Any]] = {
    "extract": {
        "name": "record_memories",
        "description": "Record the discrete, durable memories stated in the conversation.",
        "input_schema": {
            "type": "object",
            "properties": {
                "memories": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {
                                "type": "string",
                                "description": "One self-contained statement in the third "
                                "person, naming the speaker (or 'The user' when unnamed), "
                                "with relative dates resolved (e.g. 'Priya moved to Lisbon in "
                                "April 2024.').",
                            },
                            "memory_type": {"type": "string", "enum": list(MEMORY_TYPES)},
                            "topic_key": {
                                "type": ["string", "null"],
                                "description": "Dotted lowercase key of the single-valued "
                                "attribute this states, led by the person (user.residence "
                                "for the unnamed user, priya.diet for Priya; "
                                "instruction.language for instructions); null for events, "
                                "tasks and things a person can have many of.",
                            },
                            "keywords": _schema_string_list(),
                            "queries": _schema_string_list(),
                            "source_ids": _schema_string_list(),
                            "scope": {"type": "string", "enum": list(_SCOPES)},
                        },
                        "required": ["content", "memory_type"],
                    },
                }
            },
            "required": ["memories"],
        },
    },
    "summarize": {
        "name": "write_summary",
        "description": "Write the summary of the conversation.",
        "input_schema": {
            "type": "object",
            "properties": {"summary": {"type": "string"}},
            "required": ["summary"],
        },
    },
    "summary_delta": {
        "name": "update_summary",
        "description": "Update the reference summary with the messages rolling off.",
        "input_schema": {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["append", "overwrite"]},
                "summary_update": {"type": "string"},
                "add_facts": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "key": {"type": "string"},
                            "value": {"type": "string"},
                            "source_event": {"type": "string"},
                        },
                        "required": ["key", "value"],
                    },
                },
                "remove_fact_keys": _schema_string_list(),
                "add_references": _schema_string_list(),
                "remove_references": _schema_string_list(),
            },
            "required": ["mode", "summary_update"],
        },
    },
    "judge": {
        "name": "judge_supersession",
        "description": "Decide for each candidate whether the new memory supersedes it.",
        "input_schema": {
            "type": "object",
            "properties": {
                "verdicts": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "candidate_id": {"type": "string"},
                            "decision": {"type": "string", "enum": ["SUPERSEDE", "KEEP"]},
                        },
                        "required": ["candidate_id", "decision"],
                    },
                }
            },
            "required": ["verdicts"],
        },
    },
    "answer": {
        "name": "answer_question",
        "description": "Answer the question using only the given memories.",
        "input_schema": {
            "type": "object",
            "properties": {
                "answer": {
                    "type": "string",
                    "description": "The answer, or an empty string if the memories do not "
                    "answer the question.",
                },
                "used_ids": _schema_string_list(),
            },
            "required": ["answer", "used_ids"],
        },
    },
}

SYSTEM_PROMPTS: dict[str, str] = {
    "extract": (
        "You extract long-term memories from a conversation. Record only discrete, durable "
        "items each person stated (the user, or every named speaker; never the assistant): "
        "facts and preferences about themselves or people they name, decisions, standing "
        "instructions for the assistant, tasks, and dated events. Skip greetings, small "
        "talk, questions and remarks about the listener. Write each memory as one "
        "self-contained sentence in the third person: the speaker's name instead of I/my "
        "(or 'The user' when no name is given), and relative dates ('yesterday', 'last "
        "week') resolved against the message time shown in the transcript. memory_type: "
        "fact, preference, decision, note, event, instruction or task. Give a topic_key "
        "only for single-valued attributes, where a newer statement replaces an older one, "
        "led by the person's lowercase name (user.residence for the unnamed user, "
        "priya.diet for Priya; instruction.language for answer language); null for "
        "events, tasks and things one can have many of. source_ids are the [ids] of the "
        "messages the memory comes from. Tasks have scope session; everything else scope "
        "user. Do not invent anything; an empty list is fine."
    ),
    "summarize": (
        "Summarise the conversation factually in at most {max_words} words, in the third "
        "person with the speakers' names (or 'the user'): who talked and when, then what "
        "each person stated. Always keep constraints (health, diet, allergies, standing "
        "instructions); for a fact that changed during the conversation give only its "
        "latest value; resolve relative dates against the message times."
    ),
    "summary_delta": (
        "You maintain a reference summary of a conversation. Given the current summary and "
        "the messages that are rolling off the context window, return a delta: mode append "
        "(summary_update is added) or overwrite (summary_update replaces the summary), facts "
        "to add (key, value, source_event = message id) or remove by key, and message ids to "
        "add to or remove from the references."
    ),
    "judge": (
        "A user memory store has a NEW memory and some older CANDIDATE memories of the same "
        "user. For each candidate decide SUPERSEDE if the new memory contradicts or replaces "
        "it (the same attribute with a new value, a changed preference or instruction), else "
        "KEEP. Unrelated or compatible memories are KEEP. Return one verdict per candidate."
    ),
    "answer": (
        "Answer the question using only the memories given, citing the ids you used in "
        "used_ids. Answer from the memory that best supports it; never repeat the question, "
        "and when memories disagree use the one that states the change or the newer value. "
        "Questions in the first person ('where do I live?') are about the user. If the "
        "memories do not contain the answer, return an empty answer and no ids. Never guess."
    ),
}


class AnthropicLLM:
    """The :class:`~agentmem.llm.LLM` protocol on Claude, with structured output via tool use.

    Args:
        model: Model id (default ``claude-haiku-4-5``; ``AGENTMEM_LLM_MODEL`` in
            :meth:`from_env`).
        api_key: API key; default the SDK's own lookup (``ANTHROPIC_API_KEY``).
        base_url: API base URL (a proxy, or a loopback server in tests).
        client: A ready ``anthropic.Anthropic`` client to use instead of building one.
        timeout: Seconds per request attempt.
        max_retries: SDK retries of 429/5xx/connection errors/timeouts, with backoff.
        malformed_retries: Extra requests when a reply does not fit the task's schema.
        max_tokens: Output token limit per call.
        judge_model: Model for :meth:`judge` (default ``model``).

    No network traffic happens before the first task.

    Example:
        >>> llm = AnthropicLLM(base_url="http://127.0.0.1:8080", api_key="test")  # doctest: +SKIP
        >>> llm.judge("I moved to Lisbon", [("m1", "I live in Berlin")])  # doctest: +SKIP
        [Verdict(candidate_id='m1', decision='SUPERSEDE')]
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        malformed_retries: int = 1,
        max_tokens: int = 2048,
        judge_model: str | None = None,
    ) -> None:
        if not model:
            raise LLMError("model must be a non-empty model id", field="model")
        self.model = model
        self.judge_model = judge_model or model
        self.timeout = timeout
        self.max_retries = max_retries
        self.malformed_retries = max(0, malformed_retries)
        self.max_tokens = max_tokens
        self._api_key = api_key
        self._base_url = base_url
        self._client = client
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: LLMConfig, **kwargs: Any) -> AnthropicLLM:
        """Build from an :class:`~agentmem.config.LLMConfig` (keyword arguments win)."""
        opts: dict[str, Any] = {}
        for key in ("model", "judge_model", "base_url", "api_key", "timeout", "max_retries"):
            value = getattr(config, key)
            if value is not None:
                opts[key] = value
        opts.update(kwargs)
        return cls(**opts)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **kwargs: Any) -> AnthropicLLM:
        """:meth:`from_config` of ``LLMConfig.from_env(environ)`` (``AGENTMEM_LLM_MODEL``,
        ``AGENTMEM_LLM_TIMEOUT``, ``AGENTMEM_LLM_MAX_RETRIES``, ``AGENTMEM_MEMORY_JUDGE_MODEL``,
        ``ANTHROPIC_BASE_URL``; keyword arguments win)."""
        return cls.from_config(LLMConfig.from_env(environ), **kwargs)

    @property
    def name(self) -> str:
        return f"anthropic:{self.model}"

    def __repr__(self) -> str:
        return f"AnthropicLLM(model={self.model!r})"

    # -- transport -------------------------------------------------------------------------
    def _sdk(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    import anthropic
                except ImportError as exc:  # pragma: no cover - depends on the install
                    raise LLMError(
                        "the Anthropic LLM needs the 'anthropic' package: "
                        + pip_install("anthropic")
                    ) from exc
                kwargs: dict[str, Any] = {"timeout": self.timeout, "max_retries": self.max_retries}
                if self._api_key is not None:
                    kwargs["api_key"] = self._api_key
                if self._base_url is not None:
                    kwargs["base_url"] = self._base_url
                try:
                    self._client = anthropic.Anthropic(**kwargs)
                except anthropic.AnthropicError as exc:
                    raise LLMError(f"cannot create the Anthropic client: {exc}") from exc
            return self._client

    def _call(self, task: str, system: str, prompt: str, *, model: str | None = None) -> Any:
        """The tool input of one forced tool call for ``task`` (validated by the caller)."""
        import anthropic

        client = self._sdk()
        tool = TOOLS[task]
        try:
            response = client.messages.create(
                model=model or self.model,
                max_tokens=self.max_tokens,
                system=system,
                messages=[{"role": "user", "content": prompt}],
                tools=[tool],
                tool_choice={"type": "tool", "name": tool["name"]},
            )
        except anthropic.APITimeoutError as exc:
            raise LLMError(
                f"{task}: the Anthropic API timed out after {self.max_retries} retries "
                f"({self.timeout}s per attempt)",
                task=task,
                model=model or self.model,
            ) from exc
        except anthropic.APIStatusError as exc:
            raise LLMError(
                f"{task}: the Anthropic API answered HTTP {exc.status_code}"
                + (" after retries" if _retryable(exc.status_code) else ""),
                task=task,
                model=model or self.model,
                status=exc.status_code,
                request_id=getattr(exc, "request_id", None),
            ) from exc
        except anthropic.APIConnectionError as exc:
            raise LLMError(
                f"{task}: cannot reach the Anthropic API after {self.max_retries} retries: {exc}",
                task=task,
                model=model or self.model,
            ) from exc
        except anthropic.AnthropicError as exc:
            raise LLMError(f"{task}: Anthropic SDK error: {exc}", task=task) from exc
        return response

    def _run(
        self,
        task: str,
        system: str,
        prompt: str,
        parse: Any,
        *,
        model: str | None = None,
    ) -> Any:
        """Call, validate with ``parse(tool_input)``; re-ask on a malformed reply, then raise."""
        raw = ""
        problem = ""
        for attempt in range(self.malformed_retries + 1):
            response = self._call(task, system, prompt, model=model)
            raw = _raw(response)
            try:
                tool_input = _tool_input(response, TOOLS[task]["name"])
                return parse(tool_input)
            except _Malformed as exc:
                problem = str(exc)
                log.warning(
                    json.dumps(
                        {
                            "event": "llm_malformed_reply",
                            "task": task,
                            "model": model or self.model,
                            "attempt": attempt + 1,
                            "problem": problem[:200],
                        }
                    )
                )
        raise LLMError(
            f"{task}: the model's reply did not fit the {TOOLS[task]['name']} schema ({problem})",
            task=task,
            model=model or self.model,
            raw=raw,
        )

    # -- tasks -----------------------------------------------------------------------------
    def extract(self, turns: Sequence[ChatTurn]) -> list[Extracted]:
        ids = {t.id for t in turns if t.id}
        prompt = "Conversation:\n" + _render(turns)

        def parse(data: Any) -> list[Extracted]:
            items = _field(data, "memories", list)
            out: list[Extracted] = []
            for n, item in enumerate(items):
                where = f"memories[{n}]"
                if not isinstance(item, dict):
                    raise _Malformed(f"{where} is not an object")
                content = _field(item, "content", str, where).strip()
                if not content:
                    raise _Malformed(f"{where}.content is empty")
                mtype = _field(item, "memory_type", str, where)
                if mtype not in MEMORY_TYPES:
                    raise _Malformed(f"{where}.memory_type {mtype!r} is not one of {MEMORY_TYPES}")
                topic = item.get("topic_key")
                if topic is not None and not isinstance(topic, str):
                    raise _Malformed(f"{where}.topic_key is not a string")
                scope = item.get("scope", "user")
                if scope not in _SCOPES:
                    raise _Malformed(f"{where}.scope {scope!r} is not one of {_SCOPES}")
                sources = _strings(item, "source_ids", where)
                out.append(
                    Extracted(
                        content=content,
                        memory_type=mtype,
                        topic_key=topic.strip().lower() or None if topic else None,
                        keywords=_strings(item, "keywords", where),
                        queries=_strings(item, "queries", where),
                        source_ids=tuple(s for s in sources if s in ids),
                        scope=scope,
                    )
                )
            return out

        result: list[Extracted] = self._run("extract", SYSTEM_PROMPTS["extract"], prompt, parse)
        return result

    def summarize(self, turns: Sequence[ChatTurn], *, max_words: int = 200) -> str:
        system = SYSTEM_PROMPTS["summarize"].format(max_words=max_words)

        def parse(data: Any) -> str:
            summary: str = _field(data, "summary", str)
            return summary.strip()

        result: str = self._run("summarize", system, "Conversation:\n" + _render(turns), parse)
        return result

    def summary_delta(self, current: str, turns: Sequence[ChatTurn]) -> SummaryDelta:
        prompt = (
            f"Current summary:\n{current or '(empty)'}\n\nMessages rolling off:\n{_render(turns)}"
        )

        def parse(data: Any) -> SummaryDelta:
            mode = _field(data, "mode", str)
            if mode not in ("append", "overwrite"):
                raise _Malformed(f"mode {mode!r} is not append or overwrite")
            facts: list[dict[str, Any]] = []
            for n, fact in enumerate(data.get("add_facts") or []):
                where = f"add_facts[{n}]"
                if not isinstance(fact, dict):
                    raise _Malformed(f"{where} is not an object")
                entry = {
                    "key": _field(fact, "key", str, where),
                    "value": _field(fact, "value", str, where),
                }
                if isinstance(fact.get("source_event"), str):
                    entry["source_event"] = fact["source_event"]
                facts.append(entry)
            return SummaryDelta(
                mode=mode,
                summary_update=_field(data, "summary_update", str),
                add_facts=tuple(facts),
                remove_fact_keys=_strings(data, "remove_fact_keys"),
                add_references=_strings(data, "add_references"),
                remove_references=_strings(data, "remove_references"),
            )

        result: SummaryDelta = self._run(
            "summary_delta", SYSTEM_PROMPTS["summary_delta"], prompt, parse
        )
        return result

    def judge(self, new: str, candidates: Sequence[tuple[str, str]]) -> list[Verdict]:
        if not candidates:
            return []
        known = {cid for cid, _ in candidates}
        prompt = f"NEW: {new}\n\nCANDIDATES:\n" + "\n".join(
            f"[{cid}] {content}" for cid, content in candidates
        )

        def parse(data: Any) -> list[Verdict]:
            verdicts = _field(data, "verdicts", list)
            decided: dict[str, str] = {}
            for n, item in enumerate(verdicts):
                where = f"verdicts[{n}]"
                if not isinstance(item, dict):
                    raise _Malformed(f"{where} is not an object")
                cid = _field(item, "candidate_id", str, where)
                decision = _field(item, "decision", str, where)
                if cid not in known:
                    raise _Malformed(f"{where}.candidate_id {cid!r} was not a candidate")
                if decision not in ("SUPERSEDE", "KEEP"):
                    raise _Malformed(f"{where}.decision {decision!r} is not SUPERSEDE or KEEP")
                decided[cid] = decision
            # a candidate without a verdict is kept (never retire without a decision)
            return [
                Verdict(candidate_id=cid, decision=decided.get(cid, "KEEP"))  # type: ignore[arg-type]
                for cid, _ in candidates
            ]

        result: list[Verdict] = self._run(
            "judge", SYSTEM_PROMPTS["judge"], prompt, parse, model=self.judge_model
        )
        return result

    def answer(self, question: str, memories: Sequence[tuple[str, str]]) -> Answer:
        if not memories:
            return Answer(text="")
        known = {mid for mid, _ in memories}
        prompt = (
            "Memories:\n"
            + "\n".join(f"[{mid}] {content}" for mid, content in memories)
            + f"\n\nQuestion: {question}"
        )

        def parse(data: Any) -> Answer:
            text = _field(data, "answer", str).strip()
            used = tuple(dict.fromkeys(i for i in _strings(data, "used_ids") if i in known))
            if text and not used:
                raise _Malformed("a non-empty answer cites none of the given memory ids")
            return Answer(text=text, used_ids=used if text else ())

        result: Answer = self._run("answer", SYSTEM_PROMPTS["answer"], prompt, parse)
        return result


# -- helpers ---------------------------------------------------------------------------------
def _retryable(status: int) -> bool:
    return status in (408, 409, 429) or status >= 500


def _render(turns: Sequence[ChatTurn]) -> str:
    """``[id] role: text``, with the speaker and the message time when known
    (``[D1:3] 2023-05-08 13:56 UTC Caroline (user): text``): the model names speakers and
    resolves "yesterday" from them, as the offline extractor does."""
    lines = []
    for n, t in enumerate(turns):
        ident = t.id or f"t{n}"
        speaker, text = resolve_speaker(t.role, t.content, t.speaker)
        who = f"{speaker} ({t.role})" if speaker else t.role
        when = f"{t.time.astimezone(UTC):%Y-%m-%d %H:%M} UTC " if t.time is not None else ""
        lines.append(f"[{ident}] {when}{who}: {text}")
    return "\n".join(lines)


def _raw(response: Any) -> str:
    try:
        blocks = [b.model_dump() if hasattr(b, "model_dump") else b for b in response.content]
        text = json.dumps(
            {"stop_reason": getattr(response, "stop_reason", None), "content": blocks},
            ensure_ascii=False,
            default=str,
        )
    except Exception:  # pragma: no cover - best effort for inspection only
        text = repr(response)
    return text[:RAW_REPLY_CHARS]


def _tool_input(response: Any, tool_name: str) -> Any:
    for block in getattr(response, "content", None) or []:
        if getattr(block, "type", None) == "tool_use" and getattr(block, "name", None) == tool_name:
            data = block.input
            if not isinstance(data, dict):
                raise _Malformed(f"{tool_name} input is not an object")
            return data
    stop = getattr(response, "stop_reason", None)
    raise _Malformed(f"no {tool_name} tool_use block in the reply (stop_reason={stop})")


def _field(data: Any, name: str, kind: type, where: str = "") -> Any:
    label = f"{where}.{name}" if where else name
    if not isinstance(data, dict) or name not in data:
        raise _Malformed(f"missing field {label}")
    value = data[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _Malformed(f"field {label} is {type(value).__name__}, expected {kind.__name__}")
    return value


def _strings(data: Mapping[str, Any], name: str, where: str = "") -> tuple[str, ...]:
    value = data.get(name)
    if value is None:
        return ()
    label = f"{where}.{name}" if where else name
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Malformed(f"field {label} is not a list of strings")
    return tuple(v for v in value if v.strip())

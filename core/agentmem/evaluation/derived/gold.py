"""Labelled conversations for measuring derived memories: LoCoMo-shaped JSON with gold notes.

The file is a JSON list of samples in the LoCoMo layout (``conversation`` with ``speaker_a``,
``speaker_b``, ``session_N`` turns ``{speaker, dia_id, text}`` and ``session_N_date_time``),
read by :func:`agentmem.evaluation.locomo.load_locomo`. What this module adds are the gold
annotations the turns are scored against:

- ``observation``: ``session_N_observation`` -> speaker -> list of ``[fact, dia_id]`` (a fact
  about a speaker and the turn, or turns, it comes from);
- ``session_summary``: ``session_N_summary`` -> the reference summary of the session;
- optional, in the sets this project writes (``eval/derived_*.json``): ``assistant`` (the
  speaker who is an AI assistant rather than a person: their turns get role ``assistant``
  and no speaker name), ``summary_must`` (``session_N`` -> facts a summary must keep:
  constraints such as allergies, diets and standing instructions), ``summary_must_not``
  (``session_N`` -> superseded statements a summary must drop) and ``answers`` (questions
  with the gold answer's words, the evidence turns, and ``none: true`` for questions
  nothing in the conversation answers).

Where a turn names its speaker is a choice of the run (:attr:`GoldConversation.speaker_in`,
``agentmem eval --extraction FILE --speaker-in content``): ``metadata`` (the speaker as a
field, ``metadata["speaker"]``), or ``content`` (a leading ``"Name: "`` in the text and no
speaker field, the way most people store a multi-party chat). The roles are the same in both.

Example:
    >>> convs = load_gold("eval/derived_travel.json")  # doctest: +SKIP
    >>> convs[0].sessions[0].observations[0].text  # doctest: +SKIP
    'Priya is vegetarian.'
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from ...errors import ValidationError
from ...llm.base import ChatTurn
from ..locomo import Conversation, Session, load_locomo, normalise_dia_id

__all__ = [
    "SPEAKER_FORMS",
    "GoldAnswer",
    "GoldConversation",
    "GoldSession",
    "Observation",
    "load_gold",
    "session_turns",
    "turn_role",
]


#: Where a turn names its speaker (see the module docstring).
SPEAKER_FORMS: tuple[str, ...] = ("metadata", "content")


@dataclass(frozen=True, slots=True)
class Observation:
    """A gold fact about ``speaker`` and the turns it was read from."""

    speaker: str
    text: str
    dia_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GoldAnswer:
    """A question with the words its answer must contain (``none``: nothing answers it)."""

    question: str
    expect: tuple[str, ...]
    evidence: tuple[str, ...] = ()
    none: bool = False
    avoid: tuple[str, ...] = ()
    """Words an answer must not contain (a superseded value, say)."""


@dataclass(frozen=True, slots=True)
class GoldSession:
    session: Session
    observations: tuple[Observation, ...]
    summary: str | None
    must: tuple[str, ...] = ()
    must_not: tuple[str, ...] = ()

    @property
    def number(self) -> int:
        return self.session.number


@dataclass(frozen=True, slots=True)
class GoldConversation:
    conversation: Conversation
    sessions: tuple[GoldSession, ...]
    assistant: str | None = None
    answers: tuple[GoldAnswer, ...] = ()
    speaker_in: str = "metadata"
    """Where a turn names its speaker: ``metadata`` or ``content`` (:data:`SPEAKER_FORMS`)."""

    @property
    def sample_id(self) -> str:
        return self.conversation.sample_id

    def spoken(self, text: str, speaker: str | None) -> tuple[str, str | None]:
        """``(content, speaker field)`` of a turn by ``speaker`` in this run's form."""
        if speaker is None or self.speaker_in == "metadata":
            return text, speaker
        return f"{speaker}: {text}", None


def load_gold(source: str | os.PathLike[str] | Sequence[Any]) -> list[GoldConversation]:
    """Parse a labelled LoCoMo-shaped file (or its loaded JSON list).

    Raises:
        ValidationError: not a LoCoMo file, or malformed annotations (the JSON path is named).
    """
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValidationError("extraction", f"cannot read {path}: {exc.strerror}") from exc
        except json.JSONDecodeError as exc:
            raise ValidationError("extraction", f"{path} is not JSON: {exc.msg}") from exc
    else:
        data = list(source)
    if isinstance(data, Mapping):
        data = [data]
    conversations = load_locomo(data)
    out: list[GoldConversation] = []
    for n, (sample, conv) in enumerate(zip(data, conversations, strict=True)):
        where = f"extraction[{n}]"
        observations = _observations(sample.get("observation"), f"{where}.observation")
        summaries = _mapping(sample.get("session_summary"), f"{where}.session_summary")
        must = _mapping(sample.get("summary_must"), f"{where}.summary_must")
        must_not = _mapping(sample.get("summary_must_not"), f"{where}.summary_must_not")
        sessions = tuple(
            GoldSession(
                session=s,
                observations=tuple(observations.get(s.number, ())),
                summary=_text(summaries.get(f"session_{s.number}_summary")),
                must=_strings(must.get(f"session_{s.number}"), f"{where}.summary_must"),
                must_not=_strings(must_not.get(f"session_{s.number}"), f"{where}.summary_must_not"),
            )
            for s in conv.sessions
        )
        assistant = sample["conversation"].get("assistant")
        out.append(
            GoldConversation(
                conversation=conv,
                sessions=sessions,
                assistant=assistant if isinstance(assistant, str) and assistant else None,
                answers=_answers(sample.get("answers"), f"{where}.answers"),
            )
        )
    return out


def session_turns(conv: GoldConversation, session: GoldSession) -> list[ChatTurn]:
    """The turns of ``session`` as an ingest would hand them to the LLM.

    Roles follow the LoCoMo convention of :mod:`agentmem.evaluation.locomo` (``user`` for
    ``speaker_a``, ``assistant`` for ``speaker_b``); a person's turn carries the speaker's name
    and the message time (session start plus one second per turn); the turns of the
    ``assistant`` speaker carry no name. Ids are the dia ids. With ``conv.speaker_in ==
    "content"`` the name opens the content instead (``"Caroline: I went ..."``).
    """
    turns: list[ChatTurn] = []
    start = session.session.start
    for i, t in enumerate(session.session.turns):
        role, name = turn_role(conv, t.speaker)
        content, speaker = conv.spoken(t.text, name)
        turns.append(
            ChatTurn(
                role=role,
                content=content,
                id=t.dia_id,
                speaker=speaker,
                time=None if start is None else start + timedelta(seconds=i),
            )
        )
    return turns


def turn_role(conv: GoldConversation, speaker: str) -> tuple[str, str | None]:
    """(role, speaker name or None) of a turn by ``speaker``: LoCoMo's ``user`` for
    ``speaker_a`` and ``assistant`` for ``speaker_b``; in a chat with an ``assistant`` speaker,
    ``assistant`` (unnamed) for it and ``user`` for everyone else."""
    if conv.assistant is not None:
        return ("assistant", None) if speaker == conv.assistant else ("user", speaker or None)
    role = "assistant" if speaker and speaker == conv.conversation.speaker_b else "user"
    return role, speaker or None


# -- parsing helpers ------------------------------------------------------------------------
def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(where, "must be an object")
    return value


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError(where, "must map sessions to lists of strings")
    return tuple(v for v in value if v.strip())


def _observations(value: Any, where: str) -> dict[int, list[Observation]]:
    out: dict[int, list[Observation]] = {}
    for key, per_speaker in _mapping(value, where).items():
        number = _session_number(key, "_observation")
        if number is None:
            raise ValidationError(f"{where}.{key}", "is not session_N_observation")
        for speaker, facts in _mapping(per_speaker, f"{where}.{key}").items():
            if not isinstance(facts, list):
                raise ValidationError(f"{where}.{key}.{speaker}", "must be a list")
            for i, fact in enumerate(facts):
                if not isinstance(fact, list | tuple) or not fact or not isinstance(fact[0], str):
                    raise ValidationError(f"{where}.{key}.{speaker}[{i}]", "is not [fact, dia_id]")
                raw = fact[1] if len(fact) > 1 else []
                raws = raw if isinstance(raw, list) else [raw]
                dias = tuple(d for r in raws if isinstance(r, str) and (d := normalise_dia_id(r)))
                out.setdefault(number, []).append(Observation(str(speaker), fact[0], dias))
    return out


def _session_number(key: str, suffix: str) -> int | None:
    if not key.startswith("session_") or not key.endswith(suffix):
        return None
    middle = key[len("session_") : len(key) - len(suffix)]
    return int(middle) if middle.isdigit() else None


def _answers(value: Any, where: str) -> tuple[GoldAnswer, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ValidationError(where, "must be a list")
    out: list[GoldAnswer] = []
    for i, item in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("question"), str):
            raise ValidationError(at, "needs a 'question' string")
        none = bool(item.get("none", False))
        expect = item.get("expect", [])
        if not isinstance(expect, list) or not all(isinstance(e, str) for e in expect):
            raise ValidationError(f"{at}.expect", "must be a list of strings")
        if not expect and not none:
            raise ValidationError(at, "needs 'expect' words or 'none': true")
        avoid = item.get("avoid", [])
        if not isinstance(avoid, list) or not all(isinstance(e, str) for e in avoid):
            raise ValidationError(f"{at}.avoid", "must be a list of strings")
        evidence = item.get("evidence", [])
        if not isinstance(evidence, list):
            raise ValidationError(f"{at}.evidence", "must be a list of dia ids")
        out.append(
            GoldAnswer(
                question=item["question"],
                expect=tuple(expect),
                evidence=tuple(
                    d for e in evidence if isinstance(e, str) and (d := normalise_dia_id(e))
                ),
                none=none,
                avoid=tuple(avoid),
            )
        )
    return tuple(out)

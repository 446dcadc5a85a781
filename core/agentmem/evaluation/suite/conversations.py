"""The conversation format of the suite: long multi-session conversations and questions asked
later in them, each answered by turns of earlier sessions.

A file is one JSON object::

    {"version": "1", "family": "temporal", "description": "...",
     "conversations": [{"id": "tmp-01", "user": "Maya", "sessions": [
         {"id": "tmp-01-s01", "date": "2024-02-03T18:20:00",
          "turns": [{"id": "tmp-01-s01-t01", "role": "user", "text": "..."}]}]}],
     "cases": [{"id": "tmp-01-q01", "conversation": "tmp-01", "session": "tmp-01-s07",
                "query": "...", "evidence": ["tmp-01-s02-t05"], "expect_empty": false,
                "tags": ["temporal"]}]}

A conversation between two named people (a dialogue, not a user and an assistant) also
lists its ``"speakers": ["Maya", "Tom"]`` (the first is its ``user``, who holds the role
``user``; the other holds ``assistant``), and each of its turns names who said it:
``{"id": ..., "role": "user", "speaker": "Maya", "text": ...}``.

Rules the parser checks (every problem is listed with its JSON path, as for the golden
format): ids are non-empty strings, unique across the file (conversations, sessions, turns,
cases); a role is ``user`` or ``assistant``; ``speakers`` are two different names, the first
the ``user``, and then every turn names one of them, by its role; a date is ISO 8601 (read as UTC when it names no
offset) and a conversation's sessions are in strictly increasing date order; a case names a
conversation and the session the question is asked in: one of the conversation's sessions,
or a new one (an id no session of the file has), after all of them; its evidence names turns
of that conversation in *earlier* sessions (asked with ``scope="history"``, the question's
own session is not searched), at least one unless ``expect_empty`` is true, and none then.

How it is stored (:func:`write_conversations`): one user per conversation (its ``id``), one
agentmem session per session, every turn a chat message written with
:meth:`~agentmem.BoundMemory.add_messages` (one call per session), with metadata
``{"turn_id": ...}`` (and ``"speaker"`` for a turn that names one, which both indexes then
see as "Speaker: text") and an event time of the session's date plus one minute per turn (the
first turn at the date itself). A question is recalled from a memory bound to its
conversation's user and its ``session``, with ``scope="history"``; a hit is relevant when its
``turn_id`` is one of the case's evidence turns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ...memory import AgentMemory
from ..golden.dataset import DatasetError
from .cases import SuiteCase, WrittenFamily

#: Roles a turn may have.
TURN_ROLES = ("user", "assistant")
#: The metadata key carrying a stored turn's id.
TURN_ID_KEY = "turn_id"
#: The metadata key carrying who said a turn (read by agentmem's indexes).
SPEAKER_KEY = "speaker"
#: Minutes between two turns of a session.
TURN_MINUTES = 1


@dataclass(frozen=True, slots=True)
class ConversationTurn:
    """One message of a session."""

    id: str
    role: str
    text: str
    time: datetime
    """The session's date plus one minute per turn before this one."""
    speaker: str | None = None
    """Who said it, in a conversation between two named people."""


@dataclass(frozen=True, slots=True)
class ConversationSession:
    """One session of a conversation, with its date."""

    id: str
    date: datetime
    turns: tuple[ConversationTurn, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    """One user's conversation with the assistant, over several sessions."""

    id: str
    user: str
    sessions: tuple[ConversationSession, ...]
    speakers: tuple[str, ...] = ()
    """The two people talking (the first is ``user``); empty for user-assistant chat."""

    def session(self, session_id: str) -> ConversationSession | None:
        return next((s for s in self.sessions if s.id == session_id), None)


@dataclass(frozen=True, slots=True)
class ConversationCase:
    """A question asked in ``session`` of ``conversation``, answered by ``evidence`` turns."""

    id: str
    conversation: str
    session: str
    query: str
    evidence: tuple[str, ...]
    expect_empty: bool = False
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ConversationSet:
    """A validated file of the conversation format."""

    family: str
    conversations: tuple[Conversation, ...]
    cases: tuple[ConversationCase, ...]
    version: str = ""
    description: str = ""
    source: str = "<memory>"

    def conversation(self, conversation_id: str) -> Conversation:
        return next(c for c in self.conversations if c.id == conversation_id)

    @property
    def turns(self) -> int:
        return sum(len(s.turns) for c in self.conversations for s in c.sessions)


def load_conversations(path: str | Path) -> ConversationSet:
    """Read and validate a conversation-format file; raises :class:`DatasetError` listing
    every problem."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DatasetError(str(p), [("file", exc.strerror or str(exc))]) from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(str(p), [("file", f"not UTF-8 text ({exc.reason})")]) from exc
    except json.JSONDecodeError as exc:
        raise DatasetError(
            str(p), [(f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}")]
        ) from exc
    return parse_conversations(data, source=str(p))


class _Parser:
    """Collects the problems of one file while building its model."""

    def __init__(self) -> None:
        self.problems: list[tuple[str, str]] = []
        self.ids: dict[str, str] = {}  # id -> where it was first defined

    def text(self, obj: Mapping[str, Any], key: str, where: str) -> str | None:
        value = obj.get(key)
        if not isinstance(value, str) or not value.strip():
            self.problems.append((f"{where}.{key}", "must be a non-empty string"))
            return None
        return value

    def new_id(self, obj: Mapping[str, Any], where: str) -> str | None:
        id_ = self.text(obj, "id", where)
        if id_ is None:
            return None
        if id_ in self.ids:
            self.problems.append((f"{where}.id", f"duplicate id {id_!r} (also {self.ids[id_]})"))
            return None
        self.ids[id_] = where
        return id_

    def items(self, obj: Mapping[str, Any], key: str, where: str) -> list[Any]:
        value = obj.get(key)
        if not isinstance(value, list) or not value:
            self.problems.append((f"{where}.{key}", "must be a non-empty list"))
            return []
        return value

    def obj(self, value: Any, where: str) -> Mapping[str, Any] | None:
        if not isinstance(value, Mapping):
            self.problems.append((where, "must be an object"))
            return None
        return value

    def keys(self, obj: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
        unknown = set(obj) - allowed
        if unknown:
            self.problems.append((where, f"unknown keys {sorted(unknown)}"))


_TOP_KEYS = frozenset({"version", "family", "description", "conversations", "cases"})
_CONVERSATION_KEYS = frozenset({"id", "user", "speakers", "sessions"})
_SESSION_KEYS = frozenset({"id", "date", "turns"})
_TURN_KEYS = frozenset({"id", "role", "speaker", "text"})
_CASE_KEYS = frozenset(
    {"id", "conversation", "session", "query", "evidence", "expect_empty", "tags"}
)


def parse_date(raw: Any) -> datetime | None:
    """An ISO 8601 date-time as an aware datetime (UTC when it names no offset); None when
    ``raw`` is not one."""
    if not isinstance(raw, str):
        return None
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def parse_conversations(data: Any, *, source: str = "<memory>") -> ConversationSet:
    """Validate a parsed conversation-format document; raises :class:`DatasetError` listing
    every problem (see the module docstring for the rules)."""
    if not isinstance(data, Mapping):
        raise DatasetError(source, [("$", "must be a JSON object")])
    p = _Parser()
    p.keys(data, _TOP_KEYS, "$")
    family = p.text(data, "family", "$") or ""
    version = data.get("version", "")
    description = data.get("description", "")
    for key, value in (("version", version), ("description", description)):
        if not isinstance(value, str):
            p.problems.append((key, "must be a string"))
    conversations = [
        conv
        for n, raw in enumerate(p.items(data, "conversations", "$"))
        if (conv := _conversation(p, raw, f"conversations[{n}]")) is not None
    ]
    by_id = {c.id: c for c in conversations}
    cases = [
        case
        for n, raw in enumerate(p.items(data, "cases", "$"))
        if (case := _case(p, raw, f"cases[{n}]", by_id)) is not None
    ]
    if p.problems:
        raise DatasetError(source, p.problems)
    return ConversationSet(
        family=family,
        conversations=tuple(conversations),
        cases=tuple(cases),
        version=version,
        description=description,
        source=source,
    )


def _conversation(p: _Parser, raw: Any, where: str) -> Conversation | None:
    obj = p.obj(raw, where)
    if obj is None:
        return None
    before = len(p.problems)
    p.keys(obj, _CONVERSATION_KEYS, where)
    id_ = p.new_id(obj, where)
    user = p.text(obj, "user", where)
    speakers = _speakers(p, obj, user, where)
    sessions: list[ConversationSession] = []
    for n, raw_session in enumerate(p.items(obj, "sessions", where)):
        session = _session(p, raw_session, f"{where}.sessions[{n}]", speakers)
        if session is None:
            continue
        if sessions and session.date <= sessions[-1].date:
            p.problems.append(
                (
                    f"{where}.sessions[{n}].date",
                    f"must be later than the session before ({sessions[-1].date.isoformat()})",
                )
            )
        sessions.append(session)
    if len(p.problems) > before or id_ is None or user is None:
        return None
    return Conversation(id_, user, tuple(sessions), speakers)


def _speakers(p: _Parser, obj: Mapping[str, Any], user: str | None, where: str) -> tuple[str, ...]:
    """A dialogue's two speakers (the first its ``user``); () when it names none."""
    if "speakers" not in obj:
        return ()
    raw = obj["speakers"]
    names = tuple(raw) if isinstance(raw, list) else ()
    if (
        len(names) != 2
        or not all(isinstance(n, str) and n.strip() for n in names)
        or names[0] == names[1]
    ):
        p.problems.append((f"{where}.speakers", "must be two different non-empty names"))
        return ()
    if names[0] != user:
        p.problems.append((f"{where}.speakers", f"the first must be the user {user!r}"))
    return names


def _speaker(
    p: _Parser, turn: Mapping[str, Any], role: Any, speakers: tuple[str, ...], where: str
) -> str | None:
    """Who said a turn: in a dialogue, the speaker its role belongs to; else none."""
    said = turn.get("speaker")
    if not speakers:
        if "speaker" in turn:
            p.problems.append((f"{where}.speaker", "only a conversation with speakers names one"))
        return None
    if said not in speakers:
        p.problems.append((f"{where}.speaker", f"must be one of {list(speakers)}"))
        return None
    if role in TURN_ROLES and said != speakers[TURN_ROLES.index(role)]:
        p.problems.append((f"{where}.speaker", f"{said!r} does not hold the role {role!r}"))
    return str(said)


def _session(
    p: _Parser, raw: Any, where: str, speakers: tuple[str, ...] = ()
) -> ConversationSession | None:
    obj = p.obj(raw, where)
    if obj is None:
        return None
    before = len(p.problems)
    p.keys(obj, _SESSION_KEYS, where)
    id_ = p.new_id(obj, where)
    date = parse_date(obj.get("date"))
    if date is None:
        p.problems.append((f"{where}.date", "must be an ISO 8601 date-time"))
    turns: list[ConversationTurn] = []
    for n, raw_turn in enumerate(p.items(obj, "turns", where)):
        turn_where = f"{where}.turns[{n}]"
        turn = p.obj(raw_turn, turn_where)
        if turn is None:
            continue
        p.keys(turn, _TURN_KEYS, turn_where)
        turn_id = p.new_id(turn, turn_where)
        text = p.text(turn, "text", turn_where)
        role = turn.get("role")
        if role not in TURN_ROLES:
            p.problems.append((f"{turn_where}.role", f"must be one of {list(TURN_ROLES)}"))
        speaker = _speaker(p, turn, role, speakers, turn_where)
        if turn_id is not None and text is not None and date is not None:
            when = date + timedelta(minutes=TURN_MINUTES * n)
            turns.append(ConversationTurn(turn_id, str(role), text, when, speaker))
    if len(p.problems) > before or id_ is None or date is None:
        return None
    return ConversationSession(id_, date, tuple(turns))


def _case(
    p: _Parser, raw: Any, where: str, conversations: Mapping[str, Conversation]
) -> ConversationCase | None:
    obj = p.obj(raw, where)
    if obj is None:
        return None
    before = len(p.problems)
    p.keys(obj, _CASE_KEYS, where)
    id_ = p.new_id(obj, where)
    query = p.text(obj, "query", where)
    expect_empty = obj.get("expect_empty", False)
    if not isinstance(expect_empty, bool):
        p.problems.append((f"{where}.expect_empty", "must be a boolean"))
    tags = obj.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) and t.strip() for t in tags):
        p.problems.append((f"{where}.tags", "must be a list of non-empty strings"))
        tags = []
    evidence = obj.get("evidence", [])
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        p.problems.append((f"{where}.evidence", "must be a list of turn ids"))
        evidence = []
    if expect_empty is True and evidence:
        p.problems.append((f"{where}.evidence", "must be empty when expect_empty is true"))
    if expect_empty is False and not evidence:
        p.problems.append((f"{where}.evidence", "must name a turn (or set expect_empty)"))
    conv_id = p.text(obj, "conversation", where)
    session_id = p.text(obj, "session", where)
    conv = conversations.get(conv_id) if conv_id is not None else None
    if conv_id is not None and conv is None:
        p.problems.append((f"{where}.conversation", f"no conversation {conv_id!r}"))
    asked = conv.session(session_id) if conv is not None and session_id is not None else None
    if asked is None and session_id is not None and session_id in p.ids:
        p.problems.append((f"{where}.session", f"{session_id!r} is not a session of {conv_id!r}"))
    if conv is not None:
        where_turn = {t.id: s for s in conv.sessions for t in s.turns}
        for n, turn_id in enumerate(evidence):
            session = where_turn.get(turn_id)
            if session is None:
                p.problems.append((f"{where}.evidence[{n}]", f"no turn {turn_id!r} in {conv.id!r}"))
            elif asked is not None and session.date >= asked.date:
                p.problems.append(
                    (
                        f"{where}.evidence[{n}]",
                        f"{turn_id!r} is not in a session before {asked.id!r} (the question's "
                        "own session and later ones are not its history)",
                    )
                )
    if len(p.problems) > before or id_ is None or query is None or session_id is None:
        return None
    return ConversationCase(
        id=id_,
        conversation=str(conv_id),
        session=session_id,
        query=query,
        evidence=tuple(dict.fromkeys(evidence)),
        expect_empty=bool(expect_empty),
        tags=tuple(tags),
    )


def session_messages(session: ConversationSession) -> Sequence[dict[str, Any]]:
    """The ``add_messages`` payload of a session: one chat message per turn."""
    return [
        {
            "role": t.role,
            "content": t.text,
            "metadata": {TURN_ID_KEY: t.id}
            if t.speaker is None
            else {TURN_ID_KEY: t.id, SPEAKER_KEY: t.speaker},
            "event_time": t.time,
        }
        for t in session.turns
    ]


def write_conversations(mem: AgentMemory, data: ConversationSet) -> WrittenFamily:
    """Write every conversation (one user each, in tenant ``suite.<family>``)."""
    tenant = f"suite.{data.family}"
    rows = 0
    for conv in data.conversations:
        for session in conv.sessions:
            bound = mem.bind(tenant, user_id=conv.id, session_id=session.id)
            rows += len(bound.add_messages(session_messages(session)))
    cases = tuple(
        SuiteCase(
            family=data.family,
            id=case.id,
            group=case.conversation,
            query=case.query,
            evidence=frozenset(case.evidence),
            expect_empty=case.expect_empty,
            identity=mem.bind(tenant, user_id=case.conversation, session_id=case.session).identity,
            scope="history",
            tags=case.tags,
        )
        for case in data.cases
    )

    def units(row_id: str, content: str, metadata: Mapping[str, Any]) -> tuple[str, ...]:
        turn = metadata.get(TURN_ID_KEY)
        return (turn,) if isinstance(turn, str) else ()

    return WrittenFamily(data.family, cases, units, rows)


__all__ = [
    "SPEAKER_KEY",
    "TURN_ID_KEY",
    "TURN_MINUTES",
    "TURN_ROLES",
    "Conversation",
    "ConversationCase",
    "ConversationSession",
    "ConversationSet",
    "ConversationTurn",
    "load_conversations",
    "parse_conversations",
    "parse_date",
    "session_messages",
    "write_conversations",
]

"""The LoCoMo file format, parsed defensively: conversations, sessions, turns, questions."""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...errors import ValidationError

#: Scored categories and their names (category 5, adversarial, has no evidence to retrieve).
CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None = None


@dataclass(frozen=True, slots=True)
class Session:
    number: int
    date_time: str | None
    start: datetime | None
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    sample_id: str
    index: int
    """Position in the sample's ``qa`` list."""
    question: str
    category: int
    evidence: tuple[str, ...]
    """Normalised dia ids that name a turn of the conversation."""
    dropped: tuple[str, ...] = ()
    """Evidence entries that could not be parsed or name no turn."""
    answer: Any = None


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    """Scored questions: categories 1-4 with at least one resolvable evidence turn."""
    skipped: Mapping[str, int] = field(default_factory=dict)
    """Counters of what parsing left out (see :func:`load_locomo`)."""

    @property
    def turns(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


_DIA_RE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)", re.IGNORECASE)
_SESSION_RE = re.compile(r"session_(\d+)")
_DATE_FORMATS = (
    "%I:%M %p on %d %B, %Y",
    "%I:%M %p on %d %b, %Y",
    "%I:%M %p on %d %B %Y",
    "%I:%M %p on %d %b %Y",
    "%H:%M on %d %B, %Y",
)


def normalise_dia_id(raw: str) -> str | None:
    """``"d3 : 7"`` -> ``"D3:7"``; None when ``raw`` is not one dia id."""
    m = _DIA_RE.fullmatch(raw.strip())
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else None


def parse_evidence(raw: Any) -> tuple[list[str], list[str]]:
    """(dia ids, unparseable entries) of a question's ``evidence`` value.

    Accepts a list of strings or one string; an entry may hold several ids separated by
    ``;``, ``,`` or whitespace (``"D8:6; D9:17"``). Ids are normalised and de-duplicated,
    in order.

    Example:
        >>> parse_evidence(["D8:6; D9:17", "D:11:26", "D8:6", "nonsense"])
        (['D8:6', 'D9:17', 'D11:26'], ['nonsense'])
    """
    if raw is None:
        return [], []
    entries = [raw] if isinstance(raw, str) else list(raw) if isinstance(raw, list) else [raw]
    ids: dict[str, None] = {}
    bad: list[str] = []
    for entry in entries:
        if not isinstance(entry, str):
            bad.append(repr(entry))
            continue
        found = [f"D{int(a)}:{int(b)}" for a, b in _DIA_RE.findall(entry)]
        rest = _DIA_RE.sub("", entry).strip(" ;,\t\n")
        if not found or rest:
            bad.append(entry)
        for dia in found:
            ids.setdefault(dia, None)
    return list(ids), bad


def parse_session_datetime(raw: Any) -> datetime | None:
    """``"1:56 pm on 8 May, 2023"`` -> an aware UTC datetime; None when unparseable."""
    if not isinstance(raw, str):
        return None
    text = " ".join(raw.split())
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def _sessions(conv: Mapping[str, Any], skipped: dict[str, int]) -> tuple[Session, ...]:
    numbers = sorted(
        int(m.group(1))
        for key in conv
        if (m := _SESSION_RE.fullmatch(key)) and isinstance(conv[key], list)
    )
    out: list[Session] = []
    for n in numbers:
        raw_date = conv.get(f"session_{n}_date_time")
        start = parse_session_datetime(raw_date)
        if start is None:
            skipped["session_dates_unparsed"] += 1
        turns: list[Turn] = []
        for t in conv[f"session_{n}"]:
            if not isinstance(t, Mapping):
                skipped["turns_malformed"] += 1
                continue
            dia = normalise_dia_id(str(t.get("dia_id", "")))
            text = t.get("text")
            caption = t.get("blip_caption")
            text = text.strip() if isinstance(text, str) else ""
            caption = caption.strip() if isinstance(caption, str) and caption.strip() else None
            if dia is None or (not text and caption is None):
                skipped["turns_malformed"] += 1
                continue
            turns.append(Turn(dia, str(t.get("speaker") or "").strip(), text, caption))
        out.append(Session(n, raw_date if isinstance(raw_date, str) else None, start, tuple(turns)))
    return tuple(out)


def load_locomo(source: str | os.PathLike[str] | Sequence[Any]) -> list[Conversation]:
    """Parse a LoCoMo file (or its already-loaded JSON list) defensively.

    Per conversation, ``skipped`` counts: ``category_5`` and ``category_other`` questions,
    ``no_evidence`` (scored category, but no evidence entry names a turn),
    ``evidence_unresolved`` (entries dropped: unparseable or naming no turn),
    ``evidence_split`` (entries holding several ids), ``turns_malformed`` and
    ``session_dates_unparsed``.

    Raises:
        ValidationError: the file is not JSON or not a list of samples with a conversation.
    """
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValidationError("locomo", f"cannot read {path}: {exc.strerror or exc}") from exc
        except json.JSONDecodeError as exc:
            raise ValidationError("locomo", f"{path} is not JSON: {exc.msg}") from exc
    else:
        data = source
    if isinstance(data, Mapping):
        data = [data]
    if not isinstance(data, list) or not data:
        raise ValidationError("locomo", "must be a non-empty JSON list of samples")
    out: list[Conversation] = []
    seen: set[str] = set()
    for n, sample in enumerate(data):
        if not isinstance(sample, Mapping) or not isinstance(sample.get("conversation"), Mapping):
            raise ValidationError(f"locomo[{n}]", "is not a sample with a 'conversation' object")
        sample_id = str(sample.get("sample_id") or f"sample-{n}")
        if sample_id in seen:
            sample_id = f"{sample_id}-{n}"
        seen.add(sample_id)
        conv = sample["conversation"]
        skipped: dict[str, int] = defaultdict(int)
        sessions = _sessions(conv, skipped)
        known = {t.dia_id for s in sessions for t in s.turns}
        questions: list[Question] = []
        for qi, qa in enumerate(sample.get("qa") or []):
            if not isinstance(qa, Mapping) or not isinstance(qa.get("question"), str):
                skipped["qa_malformed"] += 1
                continue
            try:
                category = int(qa.get("category"))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                category = -1
            if category == 5:
                skipped["category_5"] += 1
                continue
            if category not in CATEGORIES:
                skipped["category_other"] += 1
                continue
            raw_ev = qa.get("evidence")
            ids, bad = parse_evidence(raw_ev)
            if isinstance(raw_ev, list):
                skipped["evidence_split"] += sum(
                    1 for e in raw_ev if isinstance(e, str) and len(_DIA_RE.findall(e)) > 1
                )
            evidence = tuple(i for i in ids if i in known)
            dropped = (*bad, *(i for i in ids if i not in known))
            skipped["evidence_unresolved"] += len(dropped)
            if not evidence or not qa["question"].strip():
                skipped["no_evidence"] += 1
                continue
            questions.append(
                Question(
                    sample_id=sample_id,
                    index=qi,
                    question=qa["question"],
                    category=category,
                    evidence=evidence,
                    dropped=tuple(dropped),
                    answer=qa.get("answer"),
                )
            )
        out.append(
            Conversation(
                sample_id=sample_id,
                speaker_a=str(conv.get("speaker_a") or ""),
                speaker_b=str(conv.get("speaker_b") or ""),
                sessions=sessions,
                questions=tuple(questions),
                skipped=dict(skipped),
            )
        )
    return out

"""One run of ``agentmem eval --extraction FILE``: every figure of derived memories, with goals.

:func:`run_extraction_eval` measures, on a labelled LoCoMo-shaped file (see :mod:`.gold`):

- **extraction** with the offline LLM at its default setting: recall and precision against
  the gold observations (:mod:`.measure`), per conversation, in milliseconds per message, and
  the memories' shape (types, topic keys, source ids, first person left); also *grounded*
  (a match only counts when the memory's source turns include the observation's turn) and
  two controls that show what the cosine alone rewards: each raw turn as a memory
  (``"Speaker: text"``), and each session's memories scored against the *next* session's
  observations (same people, other facts);
- **leave one conversation out** for the one tuned setting, ``min_substance``: for each
  conversation, the value is picked on the others (highest recall with precision >= the
  goal, else highest precision) and that conversation is scored with it;
- **summaries**: coverage of the observations, words against the limit, constraints kept,
  superseded statements dropped; leave-one-out as above;
- **retrieval and answers** (:mod:`.retrieval`): Recall@k with ``ingest()`` against
  ``add_messages()``, answers in both stores.

Every figure is measured with the turns naming their speaker in metadata (the default) or, with
``speaker_in="content"``, as a leading ``"Name: "`` of the text (:mod:`.gold`): the two should
agree, since every reader of a message takes the speaker from either.

Goals (from the issue this measures): extraction recall >= 0.60 at precision >= 0.65, summary
coverage >= 0.65 within the word limit.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...embeddings import Embedder
from ...errors import ValidationError
from ...llm.base import ChatTurn, Extracted
from ...llm.offline import OfflineLLM
from ...llm.offline.extract import MIN_SUBSTANCE
from .gold import SPEAKER_FORMS, GoldConversation, load_gold, session_turns
from .measure import (
    MATCH_COSINE,
    SUMMARY_MAX_WORDS,
    Counts,
    ExtractionFigures,
    TextEmbeddings,
    match,
    measure_extraction,
    measure_summaries,
)

__all__ = [
    "GOAL_PRECISION",
    "GOAL_RECALL",
    "GOAL_SUMMARY_COVERAGE",
    "SUBSTANCE_GRID",
    "ExtractionReport",
    "run_extraction_eval",
]

GOAL_RECALL = 0.60
GOAL_PRECISION = 0.65
GOAL_SUMMARY_COVERAGE = 0.65
#: The values of ``min_substance`` a leave-one-out fold chooses from.
SUBSTANCE_GRID: tuple[int, ...] = (1, 2, 3, 4)

ProgressFn = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class ExtractionReport:
    summary: dict[str, Any]
    memories: tuple[dict[str, Any], ...] = ()
    missed: tuple[dict[str, Any], ...] = ()
    summaries: tuple[dict[str, Any], ...] = ()
    questions: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return self.summary

    def write(self, out_dir: str | os.PathLike[str]) -> list[Path]:
        """``extraction.json`` (figures), ``extraction_memories.jsonl`` (every memory,
        matched or not), ``extraction_missed.jsonl``, ``extraction_summaries.jsonl`` and
        ``extraction_questions.jsonl`` in ``out_dir``."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = [out / "extraction.json"]
        paths[0].write_text(json.dumps(self.summary, indent=2) + "\n", encoding="utf-8")
        for name, rows in (
            ("extraction_memories.jsonl", self.memories),
            ("extraction_missed.jsonl", self.missed),
            ("extraction_summaries.jsonl", self.summaries),
            ("extraction_questions.jsonl", self.questions),
        ):
            path = out / name
            path.write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
            )
            paths.append(path)
        return paths

    def lines(self) -> list[str]:
        """The figures as short lines of text (the CLI prints them)."""
        s = self.summary
        e = s["extraction"]
        out = [
            f"{s['file']}: {s['conversations']} conversations, {s['sessions']} sessions, "
            f"{s['messages']} messages, {s['observations']} gold observations, speakers in "
            f"{s['speaker_in']}",
            f"extraction: recall {e['recall']:.3f} precision {e['precision']:.3f} "
            f"({e['predicted']} memories, {e['ms_per_message']:.3f} ms/message)",
            f"  grounded (same turn): recall {e['grounded']['recall']:.3f} "
            f"precision {e['grounded']['precision']:.3f}",
        ]
        for sample, c in e["by_conversation"].items():
            out.append(f"  {sample}: recall {c['recall']:.3f} precision {c['precision']:.3f}")
        for name, c in s["controls"].items():
            out.append(f"  control {name}: recall {c['recall']:.3f} precision {c['precision']:.3f}")
        loo = s["extraction_leave_one_out"]
        out.append(
            f"extraction, leave one conversation out (min_substance): recall "
            f"{loo['recall']:.3f} precision {loo['precision']:.3f}"
        )
        for fold in loo["folds"]:
            out.append(
                f"  {fold['held_out']}: min_substance={fold['chosen']} -> recall "
                f"{fold['recall']:.3f} precision {fold['precision']:.3f}"
            )
        sm = s["summaries"]
        out.append(
            f"summaries: coverage {sm['coverage']:.3f}, words median {sm['words_median']} "
            f"max {sm['words_max']} (limit {sm['max_words']}, within {sm['within_limit']:.0%}), "
            f"constraints kept {sm['constraints_kept']}, superseded dropped "
            f"{sm['superseded_dropped']}"
        )
        sl = s["summaries_leave_one_out"]
        out.append(f"summaries, leave one conversation out: coverage {sl['coverage']:.3f}")
        for mode, r in (s.get("retrieval") or {}).get("modes", {}).items():
            line = (
                f"retrieval ({mode}): R@5 {r['recall@5']:.3f} R@10 {r['recall@10']:.3f} "
                f"R@20 {r['recall@20']:.3f} over {r['questions']} questions, "
                f"{r['memories_created']} memories"
            )
            if "answers_grounded" in r:
                line += (
                    f"; answers grounded {r['answers_grounded']:.3f}, gold words "
                    f"{r['answer_word_recall']:.3f}, empty {r['answers_empty']:.3f}"
                )
            if "labelled_answers" in r:
                line += f"; labelled answers {r['labelled_answers_right']}/{r['labelled_answers']}"
            out.append(line)
        for goal, ok in s["goals"].items():
            out.append(f"goal {goal}: {'met' if ok else 'NOT met'}")
        return out


class _Grid:
    """Extraction (and summaries) of every conversation at each grid value, scored once."""

    def __init__(self, convs: Sequence[GoldConversation], embed: TextEmbeddings) -> None:
        self.convs = convs
        self.embed = embed
        self.extraction: dict[int, ExtractionFigures] = {}
        self.summary: dict[int, dict[str, Counts]] = {}

    def extract(self, value: int) -> ExtractionFigures:
        if value not in self.extraction:
            llm = OfflineLLM(min_substance=value)
            self.extraction[value] = measure_extraction(self.convs, llm, self.embed)
        return self.extraction[value]

    def summarise(self, value: int) -> dict[str, Counts]:
        if value not in self.summary:
            llm = OfflineLLM(min_substance=value)
            figures = measure_summaries(self.convs, llm, self.embed)
            self.summary[value] = dict(figures.by_conversation)
        return self.summary[value]


def _choose(by_value: dict[int, Counts], precision_floor: float | None) -> int:
    """The value with the highest recall whose precision reaches the floor (else the highest
    precision); ties go to the smaller value."""
    if precision_floor is not None:
        ok = [v for v, c in by_value.items() if c.precision >= precision_floor]
        if ok:
            return max(ok, key=lambda v: (by_value[v].recall, -v))
        return max(by_value, key=lambda v: (by_value[v].precision, -v))
    return max(by_value, key=lambda v: (by_value[v].recall, -v))


def _leave_one_out(
    samples: Sequence[str],
    scores: Callable[[int], dict[str, Counts]],
    precision_floor: float | None,
) -> dict[str, Any]:
    folds: list[dict[str, Any]] = []
    total = Counts()
    for held in samples:
        train = {
            v: sum((c for s, c in scores(v).items() if s != held), Counts()) for v in SUBSTANCE_GRID
        }
        chosen = _choose(train, precision_floor)
        got = scores(chosen)[held]
        total = total + got
        folds.append(
            {
                "held_out": held,
                "chosen": chosen,
                "recall": round(got.recall, 4),
                "precision": round(got.precision, 4),
            }
        )
    return {
        "knob": "min_substance",
        "grid": list(SUBSTANCE_GRID),
        "recall": round(total.recall, 4),
        "precision": round(total.precision, 4),
        "coverage": round(total.recall, 4),
        "folds": folds,
    }


def _controls(convs: Sequence[GoldConversation], embed: TextEmbeddings) -> dict[str, Any]:
    turns_total = Counts()
    other_total = Counts()
    llm = OfflineLLM()
    for conv in convs:
        extracted: list[list[Extracted]] = []
        for session in conv.sessions:
            turns = session_turns(conv, session)
            extracted.append(llm.extract(turns))
            gold = [o.text for o in session.observations]
            raw = [_named(t) for t in turns]
            g, p = match(embed, gold, raw)
            turns_total = turns_total + Counts(len(g), sum(g), len(p), sum(p))
        n = len(conv.sessions)
        for i in range(n if n > 1 else 0):
            other = conv.sessions[(i + 1) % n]
            g, p = match(
                embed, [o.text for o in other.observations], [e.content for e in extracted[i]]
            )
            other_total = other_total + Counts(len(g), sum(g), len(p), sum(p))
    return {
        "raw_turns_as_memories": turns_total.to_dict(),
        "memories_vs_next_session": other_total.to_dict(),
    }


def _named(turn: ChatTurn) -> str:
    return f"{turn.speaker}: {turn.content}" if turn.speaker else turn.content


def _grounded(
    figures: ExtractionFigures, convs: Sequence[GoldConversation], embed: TextEmbeddings
) -> Counts:
    """Matches that also share a turn: memory source ids include an observation's dia id."""
    total = Counts()
    by_session: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for m in figures.memories:
        by_session.setdefault((m["sample_id"], m["session"]), []).append(m)
    for conv in convs:
        for session in conv.sessions:
            mems = by_session.get((conv.sample_id, session.number), [])
            obs = session.observations
            if not obs or not mems:
                total = total + Counts(len(obs), 0, len(mems), 0)
                continue
            sim = embed([o.text for o in obs]) @ embed([m["content"] for m in mems]).T
            gold_ok = [False] * len(obs)
            pred_ok = [False] * len(mems)
            for i, o in enumerate(obs):
                for j, m in enumerate(mems):
                    if sim[i, j] >= MATCH_COSINE and set(o.dia_ids) & set(m["source_ids"]):
                        gold_ok[i] = pred_ok[j] = True
            total = total + Counts(len(obs), sum(gold_ok), len(mems), sum(pred_ok))
    return total


def run_extraction_eval(
    source: str | os.PathLike[str],
    *,
    embedder: Embedder,
    retrieval: bool = True,
    samples: Sequence[str] | None = None,
    limit_questions: int | None = None,
    max_words: int = SUMMARY_MAX_WORDS,
    home: str | os.PathLike[str] | None = None,
    progress: ProgressFn | None = None,
    speaker_in: str = "metadata",
) -> ExtractionReport:
    """Measure everything the module docstring lists on the labelled file ``source``, with
    each turn's speaker in ``metadata`` or ``content`` (see the module docstring)."""
    if speaker_in not in SPEAKER_FORMS:
        raise ValidationError("speaker_in", f"must be one of {SPEAKER_FORMS}, got {speaker_in!r}")
    convs = load_gold(source)
    if samples:
        wanted = set(samples)
        convs = [c for c in convs if c.sample_id in wanted]
    convs = [dataclasses.replace(c, speaker_in=speaker_in) for c in convs]
    embed = TextEmbeddings(embedder)
    grid = _Grid(convs, embed)
    figures = grid.extract(MIN_SUBSTANCE)
    total = figures.total
    ids = [c.sample_id for c in convs]
    extraction = {
        **total.to_dict(),
        "min_substance": MIN_SUBSTANCE,
        "match_cosine": MATCH_COSINE,
        "ms_per_message": round(figures.ms_per_message, 4),
        "by_conversation": {k: v.to_dict() for k, v in figures.by_conversation.items()},
        "grounded": _grounded(figures, convs, embed).to_dict(),
        "shape": figures.shape(),
    }
    if progress is not None:
        progress("extraction", 1, 4)
    loo = _leave_one_out(ids, lambda v: dict(grid.extract(v).by_conversation), GOAL_PRECISION)
    summaries = measure_summaries(convs, OfflineLLM(), embed, max_words=max_words)
    summary_loo = _leave_one_out(ids, grid.summarise, None)
    if progress is not None:
        progress("summaries", 2, 4)
    out: dict[str, Any] = {
        "file": str(source),
        "speaker_in": speaker_in,
        "conversations": len(convs),
        "sessions": sum(len(c.sessions) for c in convs),
        "messages": figures.messages,
        "observations": total.gold,
        "extraction": extraction,
        "controls": _controls(convs, embed),
        "extraction_leave_one_out": loo,
        "summaries": summaries.to_dict(),
        "summaries_leave_one_out": summary_loo,
    }
    questions: tuple[dict[str, Any], ...] = ()
    if retrieval:
        from .retrieval import run_retrieval

        ret = run_retrieval(
            convs, embedder=embedder, limit_questions=limit_questions, home=home, progress=progress
        )
        out["retrieval"] = ret.to_dict()
        questions = ret.rows
    within = summaries.within_limit == 1.0
    out["goals"] = {
        f"extraction recall >= {GOAL_RECALL}": total.recall >= GOAL_RECALL,
        f"extraction precision >= {GOAL_PRECISION}": total.precision >= GOAL_PRECISION,
        f"summary coverage >= {GOAL_SUMMARY_COVERAGE} within {max_words} words": (
            summaries.coverage >= GOAL_SUMMARY_COVERAGE and within
        ),
    }
    if summaries.must or summaries.must_not:
        out["goals"]["summaries keep constraints and drop superseded values"] = (
            summaries.must_kept == summaries.must
            and summaries.must_not_dropped == summaries.must_not
        )
    out["summaries"]["words_mean"] = (
        round(statistics.fmean(summaries.words), 1) if summaries.words else 0
    )
    return ExtractionReport(out, figures.memories, figures.missed, summaries.summaries, questions)

"""Precision and recall of the offline extractor on the labelled sets in eval/.

``offline_extraction_labelled.json`` was used to tune the rules (optimistic);
``offline_extraction_heldout.json`` was written afterwards and held out at first; two general
patterns it showed missing ("relocated from X to Y", "I'm a <job> at <company>") have since
been added, so it is no longer fully held out. Conversation-level figures (extraction against
gold observations, summaries, answers, retrieval) come from ``agentmem eval --extraction FILE``
on ``eval/derived_heldout.json`` and the LoCoMo dev split.

Prints figures only (never asserted here; tests/core/test_llm_offline.py holds a floor).

    .venv/bin/python benchmarks/offline_extraction.py [--show-errors]

An extracted memory is a true positive when its memory type matches an expected one of the
same message (types are compared by class: preference counts as fact). Topic keys are scored
separately on the matched pairs: exact key match, and "same-key-or-both-null" agreement.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agentmem.derived.ingest import MEMORY_CLASS
from agentmem.llm import ChatTurn, OfflineLLM

EVAL = Path(__file__).resolve().parent.parent / "eval"
SETS = ("offline_extraction_labelled.json", "offline_extraction_heldout.json")


def evaluate(path: Path, show_errors: bool = False) -> dict[str, float]:
    cases = json.loads(path.read_text())["cases"]
    llm = OfflineLLM()
    tp = fp = fn = 0
    type_exact = topic_exact = topic_pairs = 0
    for case in cases:
        got = llm.extract([ChatTurn("user", case["text"], id="m")])
        expected = [tuple(e) for e in case["expect"]]
        unmatched = list(expected)
        for item in got:
            match = next(
                (
                    e
                    for e in unmatched
                    if MEMORY_CLASS[e[0]] == MEMORY_CLASS[item.memory_type]
                    and (e[1] == item.topic_key or e[1] is None or item.topic_key is None)
                ),
                None,
            ) or next(
                (e for e in unmatched if MEMORY_CLASS[e[0]] == MEMORY_CLASS[item.memory_type]),
                None,
            )
            if match is None:
                fp += 1
                if show_errors:
                    print(f"FP  {case['text']!r} -> {item.memory_type} {item.topic_key}")
                continue
            unmatched.remove(match)
            tp += 1
            type_exact += match[0] == item.memory_type
            topic_pairs += 1
            topic_exact += match[1] == item.topic_key
            if show_errors and match[1] != item.topic_key:
                print(f"KEY {case['text']!r} -> {item.topic_key} (expected {match[1]})")
        fn += len(unmatched)
        if show_errors:
            for e in unmatched:
                print(f"FN  {case['text']!r} (expected {e[0]} {e[1]})")
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {
        "cases": len(cases),
        "expected": tp + fn,
        "extracted": tp + fp,
        "precision": precision,
        "recall": recall,
        "type_exact": type_exact / tp if tp else 0.0,
        "topic_key_exact": topic_exact / topic_pairs if topic_pairs else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--show-errors", action="store_true")
    args = parser.parse_args()
    for name in SETS:
        print(name)
        for key, value in evaluate(EVAL / name, args.show_errors).items():
            print(f"{key:>16}: {value:.3f}" if isinstance(value, float) else f"{key:>16}: {value}")


if __name__ == "__main__":
    main()

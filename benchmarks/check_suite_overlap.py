"""Shared analysed terms between each suite case's query and its evidence turns.

The implicit families promise that a trigger shares at most one content term with the turn
it should bring back; "content term" means what agentmem's own keyword analyzer keeps (the
Tantivy analyzer of :mod:`agentmem.storage.keyword_index`: lowercased, ASCII-folded,
stop words dropped, English-stemmed) in the text the index holds for the turn (a turn that
names its ``speaker`` is indexed as "Speaker: text"), so the bound is the one BM25 sees.

Prints, per case, the terms its query shares with each evidence turn (the worst turn
counts), then the distribution; exits 1 if a case shares more than ``--max`` terms.

    python benchmarks/check_suite_overlap.py                       # both implicit families
    python benchmarks/check_suite_overlap.py implicit_dialogue     # one family, by name
    python benchmarks/check_suite_overlap.py path/to/family.json --max 1 --quiet
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentmem.evaluation.suite import family_path
from agentmem.storage.keyword_index import build_analyzer
from agentmem.write.index_text import index_text

#: The families that promise the bound.
IMPLICIT_FAMILIES = ("implicit", "implicit_dialogue")


def term_analyzer() -> Callable[[str], set[str]]:
    """Text -> its set of analysed terms, as agentmem's keyword index produces them."""
    analyzer = build_analyzer()
    return lambda text: set(analyzer.analyze(text))


def shared_terms(doc: Mapping[str, Any]) -> dict[str, list[str]]:
    """Case id -> the analysed terms its query shares with its most similar evidence turn
    (cases without evidence are left out)."""
    terms = term_analyzer()
    turns = {
        t["id"]: index_text(t["text"], t.get("speaker"))
        for conv in doc["conversations"]
        for s in conv["sessions"]
        for t in s["turns"]
    }
    out: dict[str, list[str]] = {}
    for case in doc["cases"]:
        if not case["evidence"]:
            continue
        query = terms(case["query"])
        overlaps = [sorted(query & terms(turns[ev])) for ev in case["evidence"]]
        out[case["id"]] = max(overlaps, key=len)
    return out


def family_file(name: str) -> Path:
    """A family's file: a path as given, or a family name (``implicit_dialogue``) bundled."""
    path = Path(name)
    return path if path.suffix == ".json" else family_path(name)


def check(path: Path, max_shared: int, quiet: bool) -> bool:
    """Print one family's overlaps; False if a case shares more than ``max_shared`` terms."""
    shared = shared_terms(json.loads(path.read_text()))
    bad = {cid: t for cid, t in shared.items() if len(t) > max_shared}
    print(f"== {path.name}")
    for cid, t in shared.items():
        if not quiet or cid in bad:
            print(f"{cid}\t{len(t)}\t{' '.join(t)}")
    dist = Counter(len(t) for t in shared.values())
    common = Counter(w for t in shared.values() for w in t).most_common(15)
    by_count = ", ".join(f"{n}: {dist[n]}" for n in sorted(dist))
    print(f"cases: {len(shared)}; shared terms -> cases: {by_count}")
    print("most shared terms:", ", ".join(f"{w} ({n})" for w, n in common))
    if bad:
        print(
            f"{path.name}: {len(bad)} case(s) share more than {max_shared} term(s)", file=sys.stderr
        )
    return not bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "families", nargs="*", help=f"family names or JSON paths (default: {IMPLICIT_FAMILIES})"
    )
    parser.add_argument("--max", type=int, default=1, help="most shared terms allowed")
    parser.add_argument("--quiet", action="store_true", help="print only violations")
    args = parser.parse_args()
    paths = [family_file(f) for f in args.families or IMPLICIT_FAMILIES]
    ok = [check(p, args.max, args.quiet) for p in paths]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())

"""``agentmem doctor``: check the records against the keyword index and the vector collections.

Prints what :func:`agentmem.maintenance.doctor.diagnose` found (``--json``: the report as
JSON) and exits 1 when there is drift, an unreadable index, rows whose embedding failed
(``agentmem reindex`` repairs all of them) or unusable model files (the report names the
``pip`` command). Opening the data dir does not start the background indexer, so
the report shows the indexes as they are on disk.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..maintenance.doctor import DoctorReport, diagnose
from ..maintenance.erase import ErasureCheck
from ._common import EXIT_FAILED, EXIT_OK, Output, command, markup, open_memory, to_jsonable


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "doctor",
        help="check both indexes against the records (exit 1 on drift; fix with reindex)",
        description="Compare the records with the keyword and vector indexes and report "
        "drift per tenant and partition: rows missing from an index, index entries of rows "
        "that are gone, unreadable indexes, embeddings that failed, leftovers of erased "
        "identities and files no store uses; also the default embedder's model files. Exits "
        "1 when anything is wrong; `agentmem reindex` heals every kind of drift. Works "
        "beside a running writer. With --url: the key's tenant (an admin key), or the whole "
        "store (an operator key).",
    )
    p.set_defaults(func=cmd_doctor)


@command
def cmd_doctor(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    with open_memory(args, background=False, beside_writer=True) as mem:
        report = diagnose(mem.context)
        home = mem.home
    return render(out, str(home), report)


def render(out: Output, home: str, report: DoctorReport) -> int:
    """Print a doctor report (of a data dir, or of a server's); the exit status it means."""
    if out.json:
        out.result({"home": home, **to_jsonable(report)})
    else:
        broken_files = _file_problems(report.model_files)
        drift = report.problems != broken_files or any(
            (
                report.missing_keyword,
                report.extra_keyword,
                report.missing_vectors,
                report.extra_vectors,
                report.failed_vectors,
                report.orphan_collections,
                report.erasures,
                report.orphan_vector_files,
                report.orphan_rows,
                report.quarantined,
            )
        )
        if report.ok:
            status = "[green]ok[/green]"
        else:
            status = "[red]drift found[/red]" if drift else "[red]model files unusable[/red]"
        out.print(f"agentmem doctor: {markup(home)}: {status}")
        out.print(
            f"  records: {report.live_rows} live; keyword docs: {report.keyword_docs}; "
            f"vectors: {report.vectors}"
        )
        out.print(f"  embedder: {markup(_describe_embedder(report.embedder))}")
        if report.model_files is not None:
            out.print(f"  model files: {markup(_describe_files(report.model_files))}")
        for label, n in (
            ("missing keyword docs", report.missing_keyword),
            ("  of which flagged indexed (stale)", report.stale_keyword),
            ("extra keyword docs", report.extra_keyword),
            ("missing vectors", report.missing_vectors),
            ("  of which flagged embedded (stale)", report.stale_vectors),
            ("extra vectors", report.extra_vectors),
            ("rows pending keyword indexing", report.pending_keyword),
            ("rows pending embedding", report.pending_vectors),
            ("rows whose embedding failed", report.failed_vectors),
        ):
            if n:
                out.print(f"  {label}: {n}")
        for name in report.orphan_collections:
            out.print(f"  collection {name} belongs to no partition")
        if report.erasures_checked:
            out.print(f"  erasures checked: {report.erasures_checked}")
        for check in report.erasures:
            out.print(f"  [red]erasure {check.erasure_id}[/red]: {markup(_erasure(check))}")
        for name in report.orphan_vector_files:
            out.print(f"  vector files of a dropped collection remain: {name}")
        for table, n in report.orphan_rows.items():
            out.print(f"  {table}: {n} entries of rows that no longer exist")
        for name in report.quarantined:
            out.print(
                f"  {markup(name)}: a copy of an unreadable index, out of reach of forget and "
                "erase (opening the data dir for writing removes it)"
            )
        for problem in report.problems:
            out.print(f"  [red]problem[/red]: {markup(problem)}")
        for note in report.notes:
            out.print(f"  [yellow]note[/yellow]: {markup(note)}")
        for kind, ids in report.samples.items():
            out.print(f"  e.g. {kind}: {', '.join(ids)}")
        if broken_files:
            out.print("  fix the model files first: run the pip command above")
        if report.erasures:
            out.print(
                "  run `agentmem erase` again for an identity with leftovers (it removes "
                "them and finishes an interrupted erasure)"
            )
        if drift:
            after = " after that" if broken_files else ""
            out.print(f"  run `agentmem reindex`{after} to rebuild both indexes from the records")
    return EXIT_OK if report.ok else EXIT_FAILED


def _describe_files(files: list[dict[str, Any]]) -> str:
    if all(f["ok"] for f in files):
        names = ", ".join(Path(f["path"]).name for f in files)
        return f"ok ({names}; sizes and sha256 verified)"
    return "; ".join(f"{f['role']} broken" for f in files if not f["ok"]) + " (see problems)"


def _file_problems(files: list[dict[str, Any]] | None) -> list[str]:
    return [f"{f['problem']}; fix: {f['fix']}" for f in files or [] if not f["ok"]]


def _erasure(check: ErasureCheck) -> str:
    who = f"tenant {check.tenant_id!r}"
    if check.user_id is not None:
        who += f", user {check.user_id!r}"
    if check.agent_id is not None:
        who += f", agent {check.agent_id!r}"
    found = [f"{t} {n}" for t, n in check.records.items()]
    if check.keyword_entries:
        found.append(f"keyword entries {check.keyword_entries}")
    if check.collections:
        found.append(f"vector collections {len(check.collections)}")
    if check.quarantined:
        found.append(f"copies of unreadable indexes {', '.join(check.quarantined)}")
    state = "not finished" if check.status != "done" else "leftovers"
    return f"{who}: {state}" + (f": {', '.join(found)}" if found else "")


def _describe_embedder(recorded: dict[str, Any] | None) -> str:
    if recorded is None:
        return "none recorded yet (recorded with the first vectors)"
    how = {
        "first_write": "recorded with the first vectors",
        "reindex": "recorded when every record was re-embedded",
        "assumed": "assumed: the data dir predates the record",
    }.get(str(recorded.get("origin")), str(recorded.get("origin")))
    return f"{recorded['model_name']!r} ({recorded['dimensions']}-d), {how}"

"""``agentmem demo``: a scripted support agent across three sessions, then recall checks.

The script: Maya, a customer of an outdoor shop, talks to its support agent in two earlier
sessions (a backpack with a broken zipper, looked up with an order tool that returns a large
JSON payload; a rain jacket exchanged under the returns policy, a tenant document). Another
customer, Tom, has a similar complaint in his own session. In the third session the agent
asks its memory paraphrased questions about the earlier sessions.

Checks (any failure exits 1): each question's expected record is the top hit; the tool
output found by recall expands to its full payload with ``read_tool_output``; an unrelated
question returns nothing; no hit ever belongs to the other customer.

Everything runs on the embedded default (SQLite, Tantivy, Chroma, the packaged int8 MiniLM):
no configuration, no network.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.panel import Panel
from rich.table import Table

from ..config import MemoryConfig
from ..memory import AgentMemory, BoundMemory
from ..models import RecallHit, RecallResult
from ._common import EXIT_FAILED, EXIT_OK, CliError, Output, command, markup, open_memory, short

TENANT = "acme-outfitters"
AGENT = "support-bot"
ORDER = "A-10482"
TRACKING = "JD014600006281937456"
DELIVERY_NOTE = "Left with neighbour at no. 14 (signed: R. Okafor)"

RETURNS_POLICY = """\
Acme Outfitters returns and warranty policy.

Unworn clothing and unused gear can be returned within 30 days of delivery for a full \
refund to the original payment method. Items must have their original tags attached. \
Refunds are issued within five business days of the return reaching our warehouse.

Exchanges for a different size or colour are free of charge, and we send the new item as \
soon as the return is scanned by the carrier. Sale items marked final sale cannot be \
returned or exchanged.

Every product carries a two-year warranty against manufacturing defects, including \
zippers, seams, buckles and waterproof coatings. If an item arrives damaged or defective, \
we ship a replacement immediately and the customer does not need to send the faulty item \
back first.

Returns from outside the European Union must be sent with a customs declaration marked \
returned goods. We do not refund the original shipping cost unless the item was defective.

Orders placed before 2 pm on a business day leave our warehouse the same day. Standard \
delivery within Germany takes one to two business days; other EU countries take three \
to five. Parcels that cannot be delivered are held at the nearest pickup point for seven \
days before they come back to us.

Gift cards, personalised items and opened hygiene products such as hydration bladders are \
excluded from returns. Bulky items like tents and kayaks are collected from your address \
free of charge; book a pickup slot through your account page.
"""


def order_payload() -> dict[str, Any]:
    """What the order-lookup tool returns: a large, deterministic JSON document."""
    hubs = ["Leipzig hub", "Kassel depot", "Frankfurt sort centre", "Mainz depot", "Wiesbaden"]
    events = [
        {
            "seq": n,
            "time": f"2025-02-{26 + n // 40:02d}T{(6 + n // 4) % 24:02d}:{(n * 7) % 60:02d}:00Z",
            "location": hubs[n % len(hubs)],
            "status": "in transit" if n % 3 else "scanned",
            "scanner_id": f"SCN-{4400 + n * 13}",
        }
        for n in range(110)
    ]
    events.insert(
        70,
        {
            "seq": 70,
            "time": "2025-03-03T11:42:00Z",
            "location": "Wiesbaden",
            "status": "delivered",
            "delivery_note": DELIVERY_NOTE,
        },
    )
    return {
        "order_id": ORDER,
        "status": "delivered",
        "carrier": "DHL Express",
        "tracking_number": TRACKING,
        "placed_at": "2025-02-25T18:03:11Z",
        "customer": {"id": "cus_7731", "name": "Maya Chen", "tier": "Summit member"},
        "items": [
            {
                "sku": "BP-TRAIL-38-SLT",
                "name": "Trailhead 38L backpack",
                "colour": "slate grey",
                "qty": 1,
                "price_eur": 149.0,
            },
            {
                "sku": "ACC-RAIN-COVER-M",
                "name": "Backpack rain cover M",
                "colour": "orange",
                "qty": 1,
                "price_eur": 19.0,
            },
        ],
        "shipping_address": {"city": "Wiesbaden", "postcode": "65183", "country": "DE"},
        "payment": {"method": "card", "last4": "4417", "captured_eur": 168.0},
        "tracking_events": events,
        "warehouse": {"picked_by": "WH-DE-2", "packed_at": "2025-02-26T07:15:00Z"},
    }


EXCHANGE_PAYLOAD = {
    "rma": "RMA-55817",
    "type": "exchange",
    "from_sku": "JKT-STORM-M-OLV",
    "to_sku": "JKT-STORM-L-OLV",
    "label_url": "https://returns.example/labels/RMA-55817.pdf",
    "status": "awaiting return scan",
}


@dataclass(frozen=True)
class Turn:
    """One step of the script: a message, a tool result, or a remembered fact."""

    kind: str  # "user" | "assistant" | "tool" | "remember"
    text: str
    tool: str | None = None
    memory_type: str = "fact"


@dataclass(frozen=True)
class Session:
    id: str
    user: str
    date: str
    title: str
    turns: tuple[Turn, ...]


def _u(text: str) -> Turn:
    return Turn("user", text)


def _a(text: str) -> Turn:
    return Turn("assistant", text)


SESSIONS: tuple[Session, ...] = (
    Session(
        "s-0304-maya",
        "maya",
        "2025-03-04",
        "Maya: backpack arrived broken",
        (
            _u(
                f"Hi! My order {ORDER} came yesterday and the zipper on the backpack is "
                "already broken: it splits open behind the slider."
            ),
            _a("I'm sorry to hear that, Maya. Let me pull up the order details."),
            Turn("tool", json.dumps(order_payload(), indent=1), tool="lookup_order"),
            _a(
                "Found it. A defect on arrival is covered by our warranty, so I'll send you "
                "a replacement straight away; you don't need to return the broken one first."
            ),
            _u(
                "Great, thank you. Please don't phone me about it though, I never pick up "
                "unknown numbers. Email is much better for me."
            ),
            _a("Understood, I'll keep all updates to email."),
            Turn(
                "remember",
                "Maya wants to be contacted by email only; she does not answer phone calls.",
                memory_type="preference",
            ),
            _u("Can the replacement be the same slate grey colour?"),
            _a("Yes, a slate grey replacement ships within two business days."),
            Turn(
                "remember",
                "Replacement Trailhead backpack promised to Maya; ship within two business days.",
                memory_type="task",
            ),
        ),
    ),
    Session(
        "s-0306-tom",
        "tom",
        "2025-03-06",
        "Tom (another customer): bent tent poles",
        (
            _u(
                "Order B-20931 came today and two of the tent poles are bent, and the zip on "
                "the tent door is stuck."
            ),
            _a("Sorry about that, Tom. I'll arrange replacement poles and a new door zip."),
            _u("Please just call me on my mobile, I don't really read email."),
            Turn(
                "remember",
                "Tom prefers a phone call on his mobile; he rarely reads email.",
                memory_type="preference",
            ),
        ),
    ),
    Session(
        "s-0311-maya",
        "maya",
        "2025-03-11",
        "Maya: rain jacket too small",
        (
            _u(
                "Hello again. The Stormline rain jacket I bought is too tight across the "
                "shoulders, I think I need the next size up."
            ),
            _a("Let me check what our returns policy allows."),
            _a(
                "Good news: unworn clothing can be swapped for another size free of charge. "
                "Would you prefer your money back or a size L instead?"
            ),
            _u("Swap it for a large please, I really like the olive colour."),
            Turn("tool", json.dumps(EXCHANGE_PAYLOAD), tool="create_exchange"),
            _a(
                "Done: exchange RMA-55817 is open and a prepaid return label is on its way "
                "to your inbox."
            ),
            Turn(
                "remember",
                "Maya chose to exchange her Stormline rain jacket for size L rather than get "
                "a refund.",
                memory_type="decision",
            ),
            Turn(
                "remember",
                "Maya is a Summit loyalty member, entitled to 10% off accessories.",
                memory_type="fact",
            ),
        ),
    ),
    Session(
        "s-0320-maya",
        "maya",
        "2025-03-20",
        "Maya: follow-up before a trip (current)",
        (
            _u(
                "Hi, it's Maya again. I'm off hiking next weekend and want to sort a few "
                "things out before I go."
            ),
            _a("Of course! Give me a moment to look at your history with us."),
        ),
    ),
)
CURRENT = SESSIONS[-1]
OTHER_USERS = {"tom"}


@dataclass(frozen=True)
class Question:
    """A question the agent asks its memory in the current session, and what must win."""

    text: str
    kind: str
    contains: str
    about: str


QUESTIONS: tuple[Question, ...] = (
    Question(
        "How does this customer want us to get in touch with her?",
        "memory",
        "email only",
        "a preference remembered in session 1",
    ),
    Question(
        "Which order number was the backpack with the faulty zip?",
        "chat_message",
        ORDER,
        "an order number said in session 1",
    ),
    Question(
        "Which courier delivered her backpack order, and what's the tracking number?",
        "tool_output",
        TRACKING,
        "a tool result from session 1",
    ),
    Question(
        "What colour did she want for the replacement?",
        "chat_message",
        "slate grey",
        "a detail said in session 1",
    ),
    Question(
        "What did she end up doing about the jacket that didn't fit?",
        "memory",
        "size L",
        "a decision remembered in session 2",
    ),
    Question(
        "How long does a shopper have to send back clothes they haven't worn?",
        "document_chunk",
        "30 days",
        "the returns policy document",
    ),
)
UNRELATED = "What is a good recipe for mushroom risotto?"


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class DemoReport:
    home: str
    records: int = 0
    write_seconds: float = 0.0
    checks: list[Check] = field(default_factory=list)
    questions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "demo",
        help="scripted multi-session agent run showing recall (no config, no network)",
        description="Run a scripted three-session support conversation into a fresh data "
        "dir (a temporary one unless --home is given), then check that recall finds what "
        "the agent needs. Exits 1 if a check fails.",
    )
    p.add_argument(
        "--keep", action="store_true", help="keep the temporary data dir (default: remove it)"
    )
    p.set_defaults(func=command(run_demo))


def run_demo(args: argparse.Namespace) -> int:
    """Run the demo on ``--home`` (must hold no agentmem data) or a temporary dir."""
    out = Output.from_args(args)
    started = time.perf_counter()
    temporary = not args.home
    home = Path(tempfile.mkdtemp(prefix="agentmem-demo-")) if temporary else Path(args.home)
    home = home.expanduser()
    if not temporary and (home / "records.sqlite3").exists():
        raise CliError(
            f"demo needs a fresh data dir, but {home} already holds agentmem data "
            "(omit --home to use a temporary dir)"
        )
    where = (
        f"temporary, {'kept' if args.keep else 'removed at exit; --keep keeps it'}"
        if temporary
        else "kept"
    )
    out.print(
        Panel.fit(
            "[bold]agentmem demo[/]: a support agent remembers a customer across sessions\n"
            f"data dir: {markup(str(home))} ({where})\n"
            "embedded stores (SQLite + Tantivy + Chroma), local int8 MiniLM, no network",
        )
    )
    report = DemoReport(home=str(home))
    try:
        # Default tunables whatever AGENTMEM_* says, so the checks mean the same everywhere.
        with open_memory(args, home=home, config=MemoryConfig()) as mem:
            other_ids = _write_script(mem, out, report)
            _ask(mem, out, report, other_ids)
    finally:
        if temporary and not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    seconds = time.perf_counter() - started
    passed = sum(c.ok for c in report.checks)
    summary = (
        f"demo {'passed' if report.ok else 'FAILED'}: {passed}/{len(report.checks)} checks, "
        f"{report.records} records in {len(SESSIONS)} sessions of 2 customers, {seconds:.1f} s"
    )
    if out.json:
        out.result(
            {
                "ok": report.ok,
                "home": report.home,
                "kept": not temporary or args.keep,
                "records": report.records,
                "seconds": round(seconds, 3),
                "write_seconds": round(report.write_seconds, 3),
                "questions": report.questions,
                "checks": [c.__dict__ for c in report.checks],
                "summary": summary,
            }
        )
    else:
        if not temporary or args.keep:
            out.print(
                f"explore it: agentmem --home {markup(str(home))} --tenant {TENANT} "
                f'--user {CURRENT.user} recall "where is my backpack?"'
            )
        for c in report.checks:
            if not c.ok:
                out.print(f"[red]✗ {markup(c.name)}[/]: {markup(c.detail)}")
        out.print(f"[bold {'green' if report.ok else 'red'}]{summary}[/]")
    return EXIT_OK if report.ok else EXIT_FAILED


def _write_script(mem: AgentMemory, out: Output, report: DemoReport) -> set[str]:
    """Write every session; returns the ids of records owned by other customers."""
    started = time.perf_counter()
    other_ids: set[str] = set()
    kb = mem.bind(TENANT, agent_id=AGENT)
    chunks = kb.add_document(RETURNS_POLICY, source_ref="policies/returns.md")
    table = Table(title="1. Writing the conversation", title_justify="left")
    table.add_column("session")
    table.add_column("what happened", ratio=1)
    for name in ("messages", "tool outputs", "memories"):
        table.add_column(name, justify="right")
    table.add_row("(tenant)", f"returns policy document ({len(chunks)} chunks)", "", "", "")
    for s in SESSIONS:
        m = mem.bind(TENANT, user_id=s.user, agent_id=AGENT, session_id=s.id)
        ids, n_msgs, n_tools, n_mem = _write_session(m, s)
        if s.user in OTHER_USERS:
            other_ids |= ids
        table.add_row(s.id, f"{s.date}: {s.title}", str(n_msgs), str(n_tools), str(n_mem))
    mem.flush()
    report.write_seconds = time.perf_counter() - started
    report.records = mem.stats().live
    out.print(table)
    out.print(
        f"{report.records} records stored and indexed (keywords + vectors) in "
        f"{report.write_seconds:.1f} s, embedder {mem.embedder.model_name}\n"
    )
    return other_ids


def _write_session(m: BoundMemory, s: Session) -> tuple[set[str], int, int, int]:
    ids: set[str] = set()
    n_msgs = n_tools = n_mem = 0
    for n, turn in enumerate(s.turns):
        when = f"{s.date}T14:{n + 1:02d}:00+00:00"
        if turn.kind in ("user", "assistant"):
            ids.add(m.add_message(turn.kind, turn.text, event_time=when).id)
            n_msgs += 1
        elif turn.kind == "tool":
            item = m.add_tool_output(f"call_{s.id}_{n}", turn.text, tool_name=turn.tool)
            ids.add(item.id)
            n_tools += 1
        else:
            ids.add(m.remember(turn.text, memory_type=turn.memory_type).id)
            n_mem += 1
    return ids, n_msgs, n_tools, n_mem


def _ask(mem: AgentMemory, out: Output, report: DemoReport, other_ids: set[str]) -> None:
    m = mem.bind(TENANT, user_id=CURRENT.user, agent_id=AGENT, session_id=CURRENT.id)
    out.print(
        f"[bold]2. Recall in session {CURRENT.id}[/] (scope any: this session, earlier "
        f"sessions, user and agent memories, tenant documents; min_score "
        f"{mem.config.min_score})\n"
    )
    tool_hit: RecallHit | None = None
    for q in QUESTIONS:
        result, ms = _recall(m, q.text)
        top = result.items[0] if result.items else None
        ok = top is not None and top.kind == q.kind and q.contains in top.content
        leaked = [h.id for h in result.items if h.id in other_ids]
        _show(out, q.text, result, ms, ok, expected=f"{q.kind} containing {q.contains!r}")
        detail = (
            "no result"
            if top is None
            else f"top-1 was {top.kind} {short(top.content, 60)!r} (score {top.score:.3f})"
        )
        report.checks.append(Check(f"top-1 for {q.text!r} is {q.about}", ok, detail))
        if leaked:
            report.checks.append(
                Check(f"isolation for {q.text!r}", False, f"other customer's records {leaked}")
            )
        report.questions.append(_question_json(q.text, result, ms, ok))
        if q.kind == "tool_output" and top is not None and top.kind == "tool_output":
            tool_hit = top
    _expand(m, out, report, tool_hit)
    result, ms = _recall(m, UNRELATED)
    ok = not result.items
    _show(out, UNRELATED, result, ms, ok, expected="nothing (unrelated question)")
    report.checks.append(
        Check(
            "an unrelated question returns nothing",
            ok,
            "" if ok else f"{len(result.items)} hit(s), best score {result.items[0].score:.3f}",
        )
    )
    report.questions.append(_question_json(UNRELATED, result, ms, ok))
    report.checks.append(
        Check(
            "no hit belongs to the other customer",
            all(c.ok for c in report.checks if c.name.startswith("isolation")),
            "",
        )
    )


def _recall(m: BoundMemory, text: str) -> tuple[RecallResult, float]:
    started = time.perf_counter()
    result = m.recall(text, top_k=3, rerank=False)
    return result, (time.perf_counter() - started) * 1000


def _show(
    out: Output, question: str, result: RecallResult, ms: float, ok: bool, *, expected: str
) -> None:
    mark = "[green]✓[/]" if ok else "[red]✗[/]"
    table = Table(
        title=f"{mark} [bold]{markup(question)}[/]",
        caption=f"expected top-1: {markup(expected)} | {ms:.0f} ms, degraded={result.degraded}",
        title_justify="left",
        caption_justify="left",
    )
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("kind")
    table.add_column("scope")
    table.add_column("content", overflow="fold", ratio=1)
    for n, h in enumerate(result.items, 1):
        kind = h.kind + (f"/{h.memory_type}" if h.memory_type else "")
        table.add_row(str(n), f"{h.score:.3f}", kind, h.scope, markup(short(h.content, 160)))
    if not result.items:
        table.add_row("", "", "", "", "[dim](nothing above min_score)[/]")
    out.print(table)
    out.print()


def _expand(m: BoundMemory, out: Output, report: DemoReport, hit: RecallHit | None) -> None:
    if hit is None or hit.source_ref is None:
        report.checks.append(Check("tool output expands", False, "no tool output was recalled"))
        return
    full = m.read_tool_output(hit.source_ref)
    original = json.dumps(order_payload(), indent=1)
    ok = full == original and DELIVERY_NOTE not in hit.content and DELIVERY_NOTE in full
    out.print(
        Panel(
            f"recall returned a {len(hit.content):,}-character preview of the lookup_order "
            f"result; read_tool_output({hit.source_ref!r}) returns all {len(full):,} "
            f"characters.\nOnly the full payload has the delivery note: "
            f"[bold]{markup(json.loads(full)['tracking_events'][70]['delivery_note'])}[/]",
            title="3. Tool output expanded",
            title_align="left",
        )
    )
    out.print()
    report.checks.append(
        Check(
            "the recalled tool output expands to its full payload",
            ok,
            "" if ok else "read_tool_output did not return the original payload",
        )
    )


def _question_json(text: str, result: RecallResult, ms: float, ok: bool) -> dict[str, Any]:
    return {
        "question": text,
        "ok": ok,
        "latency_ms": round(ms, 2),
        "degraded": result.degraded,
        "hits": [
            {
                "score": h.score,
                "kind": h.kind,
                "memory_type": h.memory_type,
                "scope": h.scope,
                "session_id": h.session_id,
                "content": short(h.content, 200),
            }
            for h in result.items
        ],
    }

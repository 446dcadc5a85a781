"""Read-your-writes: a write is recallable as soon as its call returns, with no flush.

The memories here are opened with ``background=False``: nothing is indexed until ``flush``,
so every row written below is still missing from both indexes when recall runs (the worst
case of a write racing the background indexer).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from agentmem import AgentMemory, MemoryConfig
from agentmem.storage.keyword_index import KeywordFilter

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]
WEATHER = "Tomorrow's forecast: heavy rain and strong wind along the coast"


def test_fifty_messages_then_recall_finds_them_by_keyword_and_meaning(
    make_memory: MakeMemory,
) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    for n in range(49):
        m.add_message("user" if n % 2 else "assistant", f"Small talk line {n} about the garden")
    m.add_message("assistant", WEATHER)
    queued = mem.stats()
    assert (queued.keyword_pending, queued.vector_pending) == (50, 50)  # nothing indexed yet

    by_keyword = m.recall("weather forecast")
    assert by_keyword.items and by_keyword.items[0].content == WEATHER
    by_meaning = m.recall("will it storm tomorrow?")  # no word in common with the message
    assert by_meaning.items and by_meaning.items[0].content == WEATHER
    assert not by_keyword.degraded and not by_meaning.degraded

    mem.flush()  # once indexed, the same answers
    assert m.recall("will it storm tomorrow?").items[0].content == WEATHER


def test_a_paraphrase_finds_a_fact_written_just_before(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1")
    fact = m.remember("I commute by bicycle every day")
    result = m.recall("how do I get to work?", min_score=0.0)
    assert result.items[0].id == fact.id
    assert not result.degraded


def test_pending_rows_pass_the_same_gates(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    owner = mem.bind("acme", user_id="u1", session_id="s1")
    other = mem.bind("acme", user_id="u2", session_id="s1")
    stranger = mem.bind("globex", user_id="u1", session_id="s1")
    secret = owner.remember("The locker code is 4417", metadata={"topic": "locker"})
    owner.add_message("user", "The locker code is 4417 as noted")
    gone = owner.remember("The old locker code was 9999")
    owner.forget(gone.id)

    assert other.recall("locker code").items == []  # another user's rows
    assert stranger.recall("locker code").items == []  # another tenant's rows
    hits = owner.recall("locker code", min_score=0.0, top_k=10).items
    assert secret.id in {h.id for h in hits}
    assert gone.id not in {h.id for h in hits}  # deleted before it was ever indexed
    only_memories = owner.recall("locker code", kinds="memory", min_score=0.0).items
    assert {h.kind for h in only_memories} == {"memory"}
    filtered = owner.recall("locker code", filters={"topic": "locker"}, min_score=0.0).items
    assert [h.id for h in filtered] == [secret.id]


def test_a_backlog_past_the_bound_is_degraded_but_answers(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False, config=MemoryConfig(pending_scan=8))
    m = mem.bind("acme", user_id="u1")
    m.remember_many([f"Filler fact number {n} about stationery" for n in range(40)])
    newest = m.remember("The newest fact: the printer toner is in cabinet B")
    result = m.recall("where is the printer toner?")
    assert result.degraded  # more rows are pending than recall scores
    assert result.items[0].id == newest.id  # the newest rows are the ones scored
    mem.flush()
    after = m.recall("where is the printer toner?")
    assert not after.degraded and after.items[0].id == newest.id


def test_a_backlog_row_naming_the_queried_identifier_is_found(make_memory: MakeMemory) -> None:
    # a node catching up, or a bulk import: the row naming the id is older than the rows
    # recall reads, in neither index yet, and meaning alone would not single it out
    mem = make_memory(background=False, config=MemoryConfig(pending_scan=8))
    m = mem.bind("acme", user_id="u1")
    other = mem.bind("acme", user_id="u2")
    hidden = other.remember("Ticket INC-7QX42Z: the badge reader on floor 2 is broken")
    target = m.remember("Ticket INC-7QX42Z: the VPN drops every hour for Lena Gonzalez")
    m.remember_many([f"Ticket INC-{n:06d}: the printer on floor {n} jams" for n in range(40)])
    result = m.recall("ticket INC-7QX42Z", min_score=0.0)
    assert result.degraded  # the backlog is still longer than recall reads
    assert [h.id for h in result.items[:1]] == [target.id]
    assert hidden.id not in {h.id for h in result.items}  # the same gates as other rows
    # only the backlog's rows: none for an identifier nobody wrote, nor once indexed
    row = mem.records.memories.get(target.id)
    assert row is not None
    index = mem.records.index
    assert index.keyword_pending_naming("acme", [row.partition], ["nosuch1"], 8) == []
    mem.flush()
    assert index.keyword_pending_naming("acme", [row.partition], ["7qx42z"], 8) == []
    after = m.recall("ticket INC-7QX42Z")
    assert not after.degraded and after.items[0].id == target.id


def test_a_pending_row_saying_the_queried_name_whole_ranks_first(make_memory: MakeMemory) -> None:
    # as the keyword index's phrase search does once the rows are indexed
    # (tests/core/test_ranking_features.py: the same rows, indexed)
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1")
    for first, last in (("Tuan", "Dahl"), ("Sara", "Okafor"), ("Lena", "Moreau")):
        m.remember(f"Bongani {last} and {first} Park look after the staging host, Park mostly")
    target = m.remember("Bongani Park looks after the staging host srv-a9 in the Perth region")
    query = "Which staging host does Bongani Park look after?"
    pending = m.recall(query)
    assert pending.items[0].id == target.id and not pending.degraded
    mem.flush()
    assert m.recall(query).items[0].id == target.id


@pytest.mark.parametrize("ident", ["SKU-42BY", "CAFÉ9X", "ЗАКАЗ-123Ж"])
def test_a_backlog_row_is_found_by_the_identifier_as_typed(
    make_memory: MakeMemory, ident: str
) -> None:
    # the analysed term is not in the row's text: stemmed ("42BY" is indexed as "42bi"),
    # folded ("CAFÉ9X" as "cafe9x"); the lookup matches the word the query typed
    mem = make_memory(background=False, config=MemoryConfig(pending_scan=8))
    m = mem.bind("acme", user_id="u1")
    target = m.remember(f"Ticket {ident}: the VPN drops every hour for Lena Gonzalez")
    m.remember_many([f"Ticket INC-{n:06d}: the printer on floor {n} jams" for n in range(40)])
    result = m.recall(f"ticket {ident}", min_score=0.0)
    assert result.degraded
    assert [h.id for h in result.items[:1]] == [target.id]


def test_a_backlog_row_naming_a_number_is_not_crowded_out_by_longer_ones(
    make_memory: MakeMemory,
) -> None:
    # "4711" is a word of the target only; forty newer rows contain it inside "4711NN"
    mem = make_memory(background=False, config=MemoryConfig(pending_scan=8))
    m = mem.bind("acme", user_id="u1")
    target = m.remember("Order 4711: the customer wants a refund for the blue kettle")
    m.remember_many([f"Order 4711{n:02d}: shipped to the warehouse in bay {n}" for n in range(40)])
    result = m.recall("order 4711", min_score=0.0)
    assert result.degraded
    assert target.id in {h.id for h in result.items}
    row = mem.records.memories.get(target.id)
    assert row is not None
    named = mem.records.index.keyword_pending_naming("acme", [row.partition], ["4711"], 8)
    assert [r.item.id for _, r, _, _ in named] == [target.id]


def test_a_query_naming_a_thousand_identifiers_is_answered(make_memory: MakeMemory) -> None:
    # the lookup matches at most MAX_NEEDLES of them (SQLite refused the 1,000-deep clause)
    mem = make_memory(background=False, config=MemoryConfig(pending_scan=8))
    m = mem.bind("acme", user_id="u1")
    target = m.remember("Ticket z0q: the badge reader on floor 2 is broken")
    m.remember_many([f"Ticket INC-{n:06d}: the printer on floor {n} jams" for n in range(40)])
    result = m.recall(" ".join(f"z{i}q" for i in range(1000)), min_score=0.0)
    assert result.degraded
    assert target.id in {h.id for h in result.items}


def test_a_pending_phrase_across_a_dropped_word_is_not_said(make_memory: MakeMemory) -> None:
    # the index keeps a gap where the analyser drops a word (the "s" of "Caroline's"), so
    # its phrase search finds no "carolin sister" there; a pending row must score the same
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1")
    m.remember("Caroline's sister moved to Perth last spring")
    m.remember("Bongani Park's team moved to Perth last spring")
    engine, analyze = mem.engine, mem.keywords.analyze
    terms = mem.keywords.query_terms("Caroline sister Bongani Park moved")
    idf = mem.keywords.idf(terms, "acme")
    rows = [row for row, _, _ in engine.pending.read("acme", ["user:u1"]).rows]
    across, within = ("carolin", "sister"), ("bongani", "park")
    plain = dict(engine.pending.keyword_scores(analyze, idf, rows, {}))
    phrased = dict(engine.pending.keyword_scores(analyze, idf, rows, {across: 1.0, within: 1.0}))
    gained = {r.content.split()[0]: phrased[r.id] - plain[r.id] for r in rows}
    assert gained == {"Caroline's": 0.0, "Bongani": pytest.approx(1.0)}
    mem.flush()
    flt = KeywordFilter(tenant="acme", partitions=("user:u1",))
    for phrase, moves in ((across, False), (within, True)):
        before = dict(mem.keywords.search(terms, flt, 10))
        after = dict(mem.keywords.search(terms, flt, 10, phrases=[phrase]))
        assert (after != before) is moves, phrase


def test_identifier_lookup_matches_text_literally(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1")
    literal = m.remember("Discount code 50%off applies to order X_17")
    m.remember("Discount code 50 off applies to order XA17")
    row = mem.records.memories.get(literal.id)
    assert row is not None
    for needle in ("50%off", "x_17"):
        found = mem.records.index.keyword_pending_naming("acme", [row.partition], [needle], 10)
        assert [r.item.id for _, r, _, _ in found] == [literal.id], needle


def test_a_failing_embedder_leaves_pending_rows_keyword_only(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1")
    m.remember("Sandbox API token rotates every Friday")

    def broken(texts: object) -> object:
        raise RuntimeError("model file unreadable")

    engine = mem.engine
    original = engine.pending._embedder
    try:
        engine.pending._embedder = type("Broken", (), {"embed_documents": staticmethod(broken)})()
        result = m.recall("sandbox token rotation")
    finally:
        engine.pending._embedder = original
    assert result.items and result.items[0].content.startswith("Sandbox API token")
    assert result.degraded


@pytest.mark.parametrize("background", [True, False])
def test_write_then_recall_in_a_loop(make_memory: MakeMemory, background: bool) -> None:
    mem = make_memory(background=background)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    for n in range(15):
        token = f"ZX{n:03d}Q"
        m.add_message("user", f"My reference number is {token}")
        assert m.recall(token).items[0].content.endswith(token), n


def test_a_row_indexed_while_recall_searches_is_not_lost(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The indexer finishing a row while recall runs: both index searches answer without it
    (as they did before it was indexed), then the indexer catches up before recall goes on.
    Recall reads the pending rows before it searches, so the row is among them; read after
    the searches, it was in neither (an MCP test saw ``answer`` miss a fact this way)."""
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1")
    fact = m.remember("The user's parcel is 88")
    engine = mem.engine
    # once both sides have searched, the indexer catches up (once) before either goes on
    both_searched = threading.Barrier(
        2, action=lambda: mem.indexer.run_once(drain=True), timeout=30
    )

    def without_fact(hits: list[Any]) -> list[Any]:
        return [h for h in hits if h[0] != fact.id]

    def searched_then_indexed(search: Callable[..., Any], nested: bool) -> Callable[..., Any]:
        """``search`` as it answered before the fact was indexed; its first call then waits
        for the other side's and for the indexer."""
        calls = []

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            try:
                found = search(*args, **kwargs)
                return [without_fact(h) for h in found] if nested else without_fact(found)
            finally:
                if len(calls) == 1:
                    both_searched.wait()

        return wrapper

    monkeypatch.setattr(
        engine.keywords, "search", searched_then_indexed(engine.keywords.search, nested=False)
    )
    monkeypatch.setattr(
        engine.vectors,
        "search_many",
        searched_then_indexed(engine.vectors.search_many, nested=True),
    )
    result = m.recall("Which parcel is the user's?")
    queued = mem.stats()
    assert (queued.keyword_pending, queued.vector_pending) == (0, 0)  # indexed during the recall
    assert [i.id for i in result.items] == [fact.id]
    assert not result.degraded

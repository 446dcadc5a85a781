"""Candidate features of the ranking model, on hand-made conversations."""

from __future__ import annotations

from typing import Any

from agentmem.calibration import bundled_profile
from agentmem.evaluation.halves import uncut_request
from agentmem.phrasing import asks
from agentmem.recall.explain import recall_explain
from agentmem.recall.ranking import (
    CALIBRATION_FEATURES,
    FEATURE_NAMES,
    Candidate,
    brevity,
    features,
)
from agentmem.recall.request import RETRIEVERS
from agentmem.recall.text import (
    codes,
    compound_identifiers,
    identifier_terms,
    name_phrases,
    says,
)
from agentmem.speakers import speaker_prefix
from agentmem.storage.keyword_index import KeywordFilter

SPEAKER = FEATURE_NAMES.index("speaker_match")
IN_KEYWORD = FEATURE_NAMES.index("in_keyword")
IN_VECTOR = FEATURE_NAMES.index("in_vector")
BREVITY = FEATURE_NAMES.index("brevity")
KITTEN = "I adopted a grey kitten from the shelter last week."


def _candidates(
    mem: Any, query: str, retrievers: tuple[str, ...] = RETRIEVERS
) -> dict[str, tuple[float, ...]]:
    """Content -> features of every candidate of ``query`` (``mem``: ``(memory, bound)``)."""
    memory, bound = mem
    req = uncut_request(query, retrievers=retrievers)
    ranked, visible, _ = memory.engine.candidates(bound.identity, req)
    return {visible[c.id][1].content: c.features for c in ranked}


def _chat(make_memory: Any) -> Any:
    mem = make_memory()
    m = mem.bind("t", user_id="u", session_id="s1")
    m.add_messages(
        [
            {"role": "assistant", "content": "Morning!", "metadata": {"speaker": "Bob Stone"}},
            {
                "role": "user",
                "content": KITTEN,
                "metadata": {"speaker": "Alice"},
            },
            {
                "role": "assistant",
                "content": "Alice, a kitten from the shelter! Bob Stone adopted one too.",
                "metadata": {"speaker": "Bob Stone"},
            },
            {"role": "user", "content": "The shelter is open on Sundays."},
        ]
    )
    mem.flush()
    return mem, mem.bind("t", user_id="u", session_id="s2")


def test_feature_vectors_match_the_weights() -> None:
    scoring = bundled_profile("all-MiniLM-L6-v2-int8", 384).scoring()  # type: ignore[union-attr]
    assert scoring.weights is not None and scoring.rank_weights is not None
    assert len(FEATURE_NAMES) == len(scoring.weights) == len(scoring.rank_weights)
    assert len(features(Candidate(id="x", scope="user"), 1.0, 1.0, 1.0, 1.0)) == len(FEATURE_NAMES)
    # The calibrated score uses only its own features.
    for name, weight in zip(FEATURE_NAMES, scoring.weights, strict=True):
        assert name in CALIBRATION_FEATURES or weight == 0.0


def test_retriever_flags_and_brevity(make_memory: Any) -> None:
    mem, m = _chat(make_memory)
    m.remember("Alice's kitten is called Pretzel")  # an explicit memory: no brevity
    mem.flush()
    feats = _candidates((mem, m), "What did Alice adopt from the shelter?")
    kitten, morning = feats[KITTEN], feats["Morning!"]
    assert kitten[IN_KEYWORD] == 1.0 and kitten[IN_VECTOR] == 1.0
    assert morning[IN_KEYWORD] == 0.0 and morning[IN_VECTOR] == 1.0  # no query term
    assert morning[BREVITY] > 0.0 > kitten[BREVITY]  # the short reply is the brief one
    assert feats["Alice's kitten is called Pretzel"][BREVITY] == 0.0
    chat = [f[BREVITY] for text, f in feats.items() if text != "Alice's kitten is called Pretzel"]
    assert len(chat) == 4 and abs(sum(chat)) < 1e-9  # centred over the chat candidates


def test_brevity_values() -> None:
    assert brevity(None) == 0.0
    assert brevity(0) == 1.0
    assert brevity(10_000) == 0.0
    assert 0.0 < brevity(20) < brevity(3) < 1.0
    c = Candidate(id="x", scope="user", terms=3)
    assert features(c, 1.0, 1.0, 1.0, 1.0, 0.25)[BREVITY] == brevity(3) - 0.25
    assert features(Candidate(id="y", scope="user"), 1.0, 1.0, 1.0, 1.0, 0.25)[BREVITY] == 0.0


def test_speaker_named_in_the_query(make_memory: Any) -> None:
    m = _chat(make_memory)
    feats = _candidates(m, "What did Alice adopt from the shelter?")
    assert feats[KITTEN][SPEAKER] == 1.0
    # Bob's turn names Alice, but Bob is not who the question is about.
    assert feats["Alice, a kitten from the shelter! Bob Stone adopted one too."][SPEAKER] == 0.0
    assert feats["The shelter is open on Sundays."][SPEAKER] == 0.0  # no speaker at all


def test_speaker_match_needs_every_term_of_the_name(make_memory: Any) -> None:
    m = _chat(make_memory)
    bob = "Alice, a kitten from the shelter! Bob Stone adopted one too."
    assert _candidates(m, "Which shelter did Bob visit?")[bob][SPEAKER] == 0.0
    assert _candidates(m, "Which shelter did Bob Stone's cat come from?")[bob][SPEAKER] == 1.0


def test_speaker_match_ranks_the_named_speakers_turn_first(make_memory: Any) -> None:
    _, m = _chat(make_memory)
    hits = m.recall("What did Alice adopt from the shelter?", min_score=0.0).items
    assert hits[0].metadata.get("speaker") == "Alice"


def test_a_request_can_name_one_retriever(make_memory: Any) -> None:
    mem, m = _chat(make_memory)
    query = "Which animal came from the shelter?"
    both = _candidates((mem, m), query)
    keyword = _candidates((mem, m), query, ("keyword",))
    vector = _candidates((mem, m), query, ("vector",))
    assert keyword and all(f[IN_KEYWORD] == 1.0 and f[IN_VECTOR] == 0.0 for f in keyword.values())
    assert vector and all(f[IN_VECTOR] == 1.0 and f[IN_KEYWORD] == 0.0 for f in vector.values())
    assert "Morning!" in vector and "Morning!" not in keyword  # no word of the query in it
    assert set(keyword) | set(vector) == set(both)


PREV_COS = FEATURE_NAMES.index("prev_cos")
PREV_COVERAGE = FEATURE_NAMES.index("prev_coverage")
ID_MISS = FEATURE_NAMES.index("id_miss")


def test_identifier_terms_are_codes_not_dates_or_counts() -> None:
    assert identifier_terms(["status", "op", "9932"]) == ["9932"]
    assert identifier_terms(["inv", "2024", "0387", "amount"]) == ["0387"]  # a year is not one
    assert identifier_terms(["commit", "9f3c2ab"]) == ["9f3c2ab"]
    assert identifier_terms(["db", "replica", "07", "18", "5"]) == []  # short numbers: counts
    # ordinals, clock times and the joint of an ISO timestamp are dates, not names
    assert identifier_terms(["the", "21st", "3rd", "9am", "10pm", "21t09", "k8s"]) == ["k8s"]
    # a number's plural is the number: "504s" names HTTP 504, "1990s" the year 1990
    assert identifier_terms(["checkout", "504s"]) == ["504"]
    assert identifier_terms(["music", "1990s"]) == []


def test_a_memory_naming_another_identifier_is_penalised(make_memory: Any) -> None:
    mem = make_memory()
    m = mem.bind("t", user_id="u", session_id="s1")
    m.remember("OPS-4470 was closed as a duplicate of the DNS TTL ticket")
    m.remember("OPS-4471: rotate the TLS certificate on the edge load balancer")
    m.add_document("Ticket policy: duplicates are closed within a day.", source_ref="p.md")
    mem.flush()
    feats = _candidates((mem, m), "what's the status of OPS-4471?")
    assert feats["OPS-4471: rotate the TLS certificate on the edge load balancer"][ID_MISS] == 0.0
    other = feats["OPS-4470 was closed as a duplicate of the DNS TTL ticket"]
    assert other[ID_MISS] == 1.0 and other[FEATURE_NAMES.index("coverage")] == 0.0
    assert other[FEATURE_NAMES.index("cos")] == 0.0  # its meaning is about another ticket
    # a row that names no identifier of its own is not about another ticket
    policy = feats.get("Ticket policy: duplicates are closed within a day.")
    assert policy is None or policy[ID_MISS] == 0.0
    # an unknown ticket: every candidate names another one, nothing clears the cut-off
    assert m.recall("what's the status of OPS-9932?").items == []


def test_names_the_tokenizer_cuts_up_are_identifiers_too() -> None:
    query = "is db-replica-07 up, and where is STRIPE_WEBHOOK_SECRET? KB-87-TKL in stock?"
    assert compound_identifiers(query) == {"db-replica-07", "stripe_webhook_secret", "kb-87-tkl"}
    # codes and dates are left to identifier_terms and codes(); plain hyphenated words, a
    # dunder and a lone word are no names
    others = "OPS-4478 INV-2024-0499 2024-05-21 A-99812 e-mail __init__ follow-up snake"
    assert compound_identifiers(others) == frozenset()


def test_a_memory_naming_another_host_or_variable_is_penalised(make_memory: Any) -> None:
    """A host with a short number or a snake-case variable is one thing exactly, though the
    tokenizer cuts it into words that say little alone (db, replica, 07)."""
    mem = make_memory()
    m = mem.bind("t", user_id="u")
    disk = "db-replica-07 in eu-west has a failing disk; replication lag peaked at 340 seconds"
    failing = m.remember(disk)
    other_host = "db-replica-03 in eu-west was decommissioned in January"
    m.remember(other_host)
    m.remember("Replication lag alerts fire above 60 seconds")
    secret = m.remember("STRIPE_WEBHOOK_SECRET lives in 1Password under payments-prod")
    other_key = "STRIPE_API_KEY for staging is in the team vault as payments-staging"
    m.remember(other_key)
    mem.flush()
    feats = _candidates((mem, m), "db-replica-07")
    assert feats[disk][ID_MISS] == 0.0
    assert feats[other_host][ID_MISS] == 1.0 and feats[other_host][FEATURE_NAMES.index("cos")] == 0
    assert feats["Replication lag alerts fire above 60 seconds"][ID_MISS] == 0.0  # names none
    assert [hit.id for hit in m.recall("db-replica-07").items] == [failing.id]
    # the same when only the vector side searches, as for identifiers among the terms
    assert _candidates((mem, m), "db-replica-07", ("vector",))[other_host][ID_MISS] == 1.0
    feats = _candidates((mem, m), "where is STRIPE_WEBHOOK_SECRET kept?")
    assert feats[other_key][ID_MISS] == 1.0
    assert m.recall("where is STRIPE_WEBHOOK_SECRET kept?").items[0].id == secret.id


def test_an_unknown_invoice_returns_nothing_however_alike_the_others(make_memory: Any) -> None:
    mem = make_memory()
    m = mem.bind("t", user_id="u")
    paid = m.remember("Invoice INV-2024-0412 for 3,100 EUR was paid on 2 May")
    m.remember("Invoice INV-2024-0415 is overdue")
    m.remember("Invoices are sent on the first working day")
    mem.flush()
    assert m.recall("is INV-2024-0498 paid?").items == []
    assert m.recall("is INV-2024-0412 paid?").items[0].id == paid.id


def test_codes_name_one_thing_and_amounts_are_not_codes(make_memory: Any) -> None:
    analyze = make_memory().keywords.analyze
    found = codes("status of OPS-4478, E1045 and 9f3c2ac?", analyze)
    assert found == [
        (frozenset({"ops", "op"}), frozenset({"4478"})),
        (frozenset({"e1045"}),),
        (frozenset({"9f3c2ac"}),),
    ]
    assert says(found[0], {"op", "4478", "rotat"}) and says(found[0], {"ops", "4478"})
    assert not says(found[0], {"inc", "4478"}) and not says(found[0], {"op", "4471"})
    assert codes("where is order #100489", analyze) == [(frozenset({"100489"}),)]
    red = codes("TR-2041-RED left?", analyze)[0]
    assert not says(red, set(analyze("TR-2041-BLK: 40 pairs")))
    amounts = "£400 coat, 14,000 words, $22k, $20M, pays 4200, 500mg, the 7p shift, COVID-19"
    assert codes(amounts + " covid19 2024-05-21T09:00 room 2407 db-eu-05", analyze) == []


def test_a_query_naming_an_identifier_nothing_says_gets_nothing(make_memory: Any) -> None:
    """Neighbours naming no identifier of their own are not about the one asked for either;
    with min_score 0 the caller still gets every candidate."""
    mem = make_memory()
    m = mem.bind("t", user_id="u")
    m.remember("The warehouse scanner fleet got a firmware update and now reports status hourly")
    m.remember("Ticket status is reviewed every Monday by the ops lead")
    shipped = m.remember("Order A-99812 (standing desk) was shipped via DHL on 3 March")
    outage = m.remember("Checkout has been returning HTTP 504 since 14:05 UTC")
    mem.flush()
    assert m.recall("what's the status of ticket OPS-4478?").items == []
    assert m.recall("what's the status of ticket OPS-4478?", min_score=0).items
    assert m.recall("what happened with order A-99812?").items[0].id == shipped.id
    # the plural of a number names the number
    assert m.recall("when did checkout start returning 504s?").items[0].id == outage.id
    # a query naming no identifier is not affected
    assert m.recall("what is reviewed on Mondays?").items
    # a row in another language says the code its own way ("OPS" is not stemmed there)
    ticket = "Das Ticket OPS-5521 ist erledigt: der Drucker im zweiten Stock geht wieder"
    german = m.remember(ticket)
    mem.flush()
    assert "ops" in set(mem.keywords.analyze(ticket))
    why = recall_explain(m.store.context, m.identity, "what's the status of OPS-5521?")
    assert why.result.items and "unknown_code" not in why.cut_counts
    assert german.id in [c.id for c in why.candidates]


def test_an_identifier_outweighs_the_words_around_it_in_the_keyword_search(
    make_memory: Any,
) -> None:
    """Rows sharing every other query word ("medical record MED-...") but naming other ids
    must not push the one row naming the id out of the keyword candidates."""
    mem = make_memory()
    m = mem.bind("t", user_id="u", session_id="s1")
    kids = ["Ana", "Ben", "Chloe", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun"]
    foods = ("peanuts", "shellfish", "sesame")
    cities = ("Lisbon", "Oslo", "Lima", "Perth", "Quito", "Turin", "Accra", "Hanoi")
    for n in range(250):  # other talk: "medical record" is not a common phrase here
        m.add_message("user", f"Trip {n}: the train to {cities[n % 8]} left at {n % 12 + 1} pm")
    # (written before the allergy records: a message is indexed with the two before it)
    target = m.add_message("user", "Allergy note (MED-SY2FJL): Anders must avoid gluten")
    for n in range(mem.config.candidates + 5):
        kid, food = kids[n % len(kids)], foods[n % 3]
        m.add_message("user", f"{kid} is allergic to {food}: medical record MED-{n:03d}Q")
    mem.flush()
    plain = mem.keywords.search(
        mem.keywords.query_terms("medical record MED-SY2FJL"),
        KeywordFilter(tenant="t", partitions=("conv:u:u",)),
        mem.config.candidates,
    )
    assert target.id not in [i for i, _ in plain]  # without the identifier's weight
    keyword_side = _candidates((mem, m), "medical record MED-SY2FJL", ("keyword",))
    assert target.content in keyword_side
    assert m.recall("medical record MED-SY2FJL").items[0].id == target.id


def test_name_phrases_are_runs_of_capitalised_words(make_memory: Any) -> None:
    analyze = make_memory().keywords.analyze
    assert name_phrases("Which host does Bongani Park look after?", analyze) == [
        ("bongani", "park")
    ]
    # a stop word or punctuation ends a run; one capitalised word is no phrase
    assert name_phrases("Did Melanie Smith, Jon and The New York Times agree?", analyze) == [
        ("melani", "smith"),
        ("new", "york", "time"),
    ]
    assert name_phrases("what did caroline say about Paris?", analyze) == []
    assert name_phrases('Was "Becoming Nicole" (the book) good?', analyze) == [("becom", "nicol")]
    # so does a full stop
    assert name_phrases("I met Lena Gonzalez. Bongani Park looks after it", analyze) == [
        ("lena", "gonzalez"),
        ("bongani", "park"),
    ]
    # but an initial's or a title's does not
    assert name_phrases("Did Dr. Seuss or J. Smith write it?", analyze) == [
        ("dr", "seuss"),
        ("j", "smith"),
    ]
    # a run opening a sentence may be capitalised for that alone: also without its first word
    assert name_phrases("Describe Bongani Park's staging host", analyze) == [
        ("describ", "bongani", "park"),
        ("bongani", "park"),
    ]
    # the index keeps a gap where the analyser drops a word: no phrase spans one
    assert name_phrases("Where did Caroline's Sister move?", analyze) == []
    assert name_phrases("the Rock-and-Roll Hall", analyze) == []
    # one word of two parts is said whole too
    assert name_phrases("medical record MED-FWWUGJ", analyze) == [("med", "fwwugj")]
    # any script's capitals
    assert name_phrases("Which host does Émile Łukasz look after?", analyze) == [("emil", "lukasz")]


def test_a_full_name_said_together_outranks_its_words_apart(make_memory: Any) -> None:
    """Rows naming "Bongani Dahl" and "Tuan Park" (each word of the name, apart, more often)
    must not push out the row naming Bongani Park."""
    mem = make_memory()
    m = mem.bind("t", user_id="u")
    for first, last in (("Tuan", "Dahl"), ("Sara", "Okafor"), ("Lena", "Moreau")):
        m.remember(f"Bongani {last} and {first} Park look after the staging host, Park mostly")
    target = m.remember("Bongani Park looks after the staging host srv-a9 in the Perth region")
    mem.flush()
    query = "Which staging host does Bongani Park look after?"
    flt = KeywordFilter(tenant="t", partitions=("user:u",))
    terms = mem.keywords.query_terms(query)
    plain = mem.keywords.search(terms, flt, 10)
    assert plain[0][0] != target.id  # the words alone favour the rows that repeat them
    phrased = mem.keywords.search(terms, flt, 10, phrases=name_phrases(query, mem.keywords.analyze))
    assert phrased[0][0] == target.id
    assert m.recall(query).items[0].id == target.id
    # the name after a sentence's full stop, and after a capitalised opening verb
    for query in (
        "I asked Maria Lopez. Bongani Park looks after which staging host?",
        "Describe Bongani Park's staging host",
    ):
        assert m.recall(query).items[0].id == target.id, query


def test_an_answer_carries_how_well_its_question_matched(make_memory: Any) -> None:
    mem = make_memory()
    old = mem.bind("t", user_id="u", session_id="s-mon")
    old.add_messages(
        [
            {"role": "user", "content": "When is my dentist appointment again?"},
            {"role": "assistant", "content": "Thursday at 15:40 with Dr. Aydin."},
            {"role": "user", "content": "Perfect, and remind me to buy toothpaste"},
        ]
    )
    mem.flush()
    m = mem.bind("t", user_id="u", session_id="s-now")
    feats = _candidates((mem, m), "what time is the dentist?")
    question = feats["When is my dentist appointment again?"]
    answer = feats["Thursday at 15:40 with Dr. Aydin."]
    assert answer[PREV_COS] == question[FEATURE_NAMES.index("cos")] > 0.3
    assert answer[PREV_COVERAGE] == question[FEATURE_NAMES.index("coverage")] > 0.0
    assert question[PREV_COS] == 0.0
    hits = m.recall("what time is the dentist?", scope="history").items
    assert "Thursday at 15:40 with Dr. Aydin." in [h.content for h in hits]


def test_speaker_named_inline_counts_like_metadata(make_memory: Any) -> None:
    assert speaker_prefix("Caroline: I went to the support group") == (
        "Caroline",
        "I went to the support group",
    )
    assert speaker_prefix("Mary Ann Smith: ok") == ("Mary Ann Smith", "ok")
    assert speaker_prefix("hello: world") is None
    mem = make_memory()
    m = mem.bind("t", user_id="u", session_id="s1")
    m.add_messages(
        [
            {"role": "user", "content": "Alice: I adopted a grey kitten from the shelter."},
            {"role": "assistant", "content": "Bob: A kitten, Alice! I adopted one too."},
        ]
    )
    mem.flush()
    feats = _candidates((mem, mem.bind("t", user_id="u", session_id="s2")), "What did Alice adopt?")
    assert feats["Alice: I adopted a grey kitten from the shelter."][SPEAKER] == 1.0
    assert feats["Bob: A kitten, Alice! I adopted one too."][SPEAKER] == 0.0


def test_labels_and_tool_fields_are_no_speakers_for_ranking(make_memory: Any) -> None:
    mem = make_memory()
    m = mem.bind("t", user_id="u", session_id="s1")
    m.add_messages([{"role": "user", "content": "Update: the parcel is with the courier."}])
    m.add_tool_output("call-1", "Courier: parcel delivered to the front door", tool_name="track")
    mem.flush()
    bound = mem.bind("t", user_id="u", session_id="s2")
    feats = _candidates((mem, bound), "any update from the courier on the parcel?")
    assert feats["Update: the parcel is with the courier."][SPEAKER] == 0.0
    assert feats["Courier: parcel delivered to the front door"][SPEAKER] == 0.0


def test_a_message_asks_when_it_ends_with_a_question_mark() -> None:
    assert asks("Which activities sound fun for the coast weekend?")
    assert asks('She said "are you coming?"  ') and asks("(is it free?)")
    assert asks("週末は何をしますか？")
    assert not asks("I run 10 km on Sunday mornings.")
    assert not asks("Is it free? Yes, on Sundays.")  # asked and answered
    assert not asks("") and not asks("?!")


def test_equal_keyword_scores_rank_in_write_order_whatever_the_index_gives(
    make_memory: Any, monkeypatch: Any
) -> None:
    """Tantivy gives equal scores in the order of the segments holding the rows, which
    depends on when the indexer committed them: the ranks, and so the recall, must not."""
    mem = make_memory(background=False)
    m = mem.bind("t", user_id="u")
    older = m.remember("Alice drinks green tea daily").id
    newer = m.remember("Bobby drinks green tea daily").id
    mem.flush()
    req = uncut_request("green tea")

    def ranks() -> tuple[dict[str, int | None], list[tuple[str, float]]]:
        ranked, _, _ = mem.engine.candidates(m.identity, req)
        hits = m.recall("green tea", min_score=0.0).items
        return {c.id: c.kw_rank for c in ranked}, [(h.id, h.score) for h in hits]

    row = mem.records.memories.get(older)
    assert row is not None
    flt = KeywordFilter(tenant="t", partitions=(row.partition,))
    hits = mem.keywords.search(mem.keywords.query_terms("green tea"), flt, 10)
    assert len(hits) == 2 and hits[0][1] == hits[1][1]  # a tie
    in_one_segment = ranks()
    assert in_one_segment[0] == {older: 1, newer: 2}
    search = mem.keywords.search

    def other_segment_order(*args: Any, **kwargs: Any) -> list[tuple[str, float]]:
        found = search(*args, **kwargs)
        return sorted(reversed(found), key=lambda hit: -hit[1])  # ties the other way round

    monkeypatch.setattr(mem.keywords, "search", other_segment_order)
    assert ranks() == in_one_segment

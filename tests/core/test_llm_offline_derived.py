"""Self-contained derived memories from the offline LLM: extraction, summaries, answers.

Chats written for these tests (none of them is an evaluation set): a travel chat with a
diet, an allergy, a standing instruction, a decision and a booking number; LoCoMo-style
turns between two named people with relative dates; statements that are no memories.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from agentmem import AgentMemory
from agentmem.embeddings import CachedEmbedder
from agentmem.llm import ChatTurn, Extracted, OfflineLLM
from agentmem.llm.offline.dates import resolve
from agentmem.llm.offline.perspective import first_person, third_person

MakeMemory = Callable[..., AgentMemory]
MONDAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _offline_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def extract(*turns: ChatTurn) -> list[Extracted]:
    return OfflineLLM().extract(list(turns))


def contents(items: list[Extracted]) -> list[str]:
    return [e.content for e in items]


# -- perspective and dates -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I live in Berlin and work as a nurse", "Jon lives in Berlin and works as a nurse"),
        ("I'm starting a dance studio", "Jon is starting a dance studio"),
        (
            "I've been into dancing since I was a kid",
            "Jon has been into dancing since Jon was a kid",
        ),
        ("I don't eat meat", "Jon doesn't eat meat"),
        (
            "I study biology and my sister teaches it",
            "Jon studies biology and Jon's sister teaches it",
        ),
        ("We went camping with our kids", "Jon and others went camping with Jon's kids"),
        ("Mel and I went camping", "Mel and Jon went camping"),
        ("I need to renew my passport", "Jon needs to renew Jon's passport"),
        ("Where do I live?", "Where does Jon live?"),
    ],
)
def test_third_person(text: str, expected: str) -> None:
    assert third_person(text, "Jon") == expected


def test_first_person_reads_a_stored_memory_back() -> None:
    assert first_person("Jon lives in Paris.") == ("jon", "I live in Paris.")
    assert first_person("The user's editor is vim") == ("user", "my editor is vim")
    assert first_person("Jon and others decided to use Postgres") == (
        "jon",
        "we decided to use Postgres",
    )
    assert first_person("the weather is nice")[0] is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went there yesterday", "I went there on 7 May 2023"),
        ("we met last week", "we met in the week before 8 May 2023"),
        ("I painted it last year", "I painted it in 2022"),
        ("since last year", "since 2022"),
        ("I ran a race last Saturday", "I ran a race on Saturday, 6 May 2023"),
        ("we went camping last weekend", "we went camping on the weekend of 6 May 2023"),
        ("I quit two weeks ago", "I quit around 24 April 2023"),
        ("I moved 3 months ago", "I moved in February 2023"),
        ("I saw it a few days ago", "I saw it a few days before 8 May 2023"),
        ("see you next month", "see you in June 2023"),
        ("I did it recently", "I did it recently"),
    ],
)
def test_relative_dates_are_resolved(text: str, expected: str) -> None:
    assert resolve(text, MONDAY) == expected
    assert resolve(text, None) == text


# -- extraction ------------------------------------------------------------------------------

TRAVEL = [
    ChatTurn("user", "Hello! Helping me plan a week in Portugal with my friend Ana?", id="u1"),
    ChatTurn("assistant", "Of course! Any dietary needs?", id="a1"),
    ChatTurn("user", "Yes: I'm a strict vegetarian.", id="u2"),
    ChatTurn("user", "And I'm allergic to shellfish, badly.", id="u3"),
    ChatTurn("assistant", "Thanks, I'll keep both in mind.", id="a2"),
    ChatTurn("user", "I get carsick easily, so from now on never suggest long bus rides.", id="u4"),
    ChatTurn("assistant", "Understood. Trains it is. A CP rail pass or single tickets?", id="a3"),
    ChatTurn("user", "We decided to go with the rail pass.", id="u5"),
    ChatTurn("user", "Booked the Lisbon hotel, my confirmation number is LX-90210.", id="u6"),
    ChatTurn("user", "Thanks, that's great!", id="u7"),
]


def test_travel_chat_constraints_decision_and_booking_are_extracted() -> None:
    got = extract(*TRAVEL)
    by_source = {e.source_ids: e for e in got}
    diet = by_source[("u2",)]
    assert (diet.memory_type, diet.topic_key) == ("preference", "user.diet")
    assert diet.content == "The user is a strict vegetarian."
    allergy = by_source[("u3",)]
    assert (allergy.memory_type, allergy.topic_key) == ("fact", "user.allergy.shellfish")
    assert allergy.content.startswith("The user is allergic to shellfish")
    instruction = next(e for e in got if e.memory_type == "instruction")
    assert "bus rides" in instruction.content and instruction.source_ids == ("u4",)
    assert any("carsick" in e.content for e in got)  # the reason is kept too
    decision = by_source[("u5",)]
    assert decision.memory_type == "decision" and "rail pass" in decision.content
    assert any("LX-90210" in e.content and e.source_ids == ("u6",) for e in got)
    # small talk, the assistant's turns and the question are no memories
    assert not {("u7",), ("a1",), ("a2",), ("a3",)} & set(by_source)
    for e in got:  # self-contained: nobody says "I"
        assert not any(w in e.content.split() for w in ("I", "my", "me"))


def test_named_speakers_are_named_and_dates_resolved() -> None:
    got = extract(
        ChatTurn("user", "Hey Gina! Lost my job as a banker yesterday.", "D1:2", "Jon", MONDAY),
        ChatTurn("assistant", "Oh no, sorry Jon! What's next?", "D1:3", "Gina", MONDAY),
        ChatTurn("user", "I'm starting my own dance studio next month.", "D1:4", "Jon", MONDAY),
        ChatTurn("assistant", "I opened my clothing store last week!", "D1:5", "Gina", MONDAY),
    )
    assert contents(got) == [
        "Jon lost Jon's job as a banker on 7 May 2023.",
        "Jon is starting Jon's own dance studio in June 2023.",
        "Gina opened Gina's clothing store in the week before 8 May 2023.",
    ]
    assert [e.memory_type for e in got] == ["event", "event", "event"]
    assert [e.source_ids for e in got] == [("D1:2",), ("D1:4",), ("D1:5",)]


def test_topic_keys_name_the_person() -> None:
    got = extract(
        ChatTurn("user", "I live in Oslo.", "t1", "Jon"),
        ChatTurn("assistant", "I live in Rome.", "t2", "Gina"),
        ChatTurn("user", "I live in Lima.", "t3"),
    )
    assert [e.topic_key for e in got] == ["jon.residence", "gina.residence", "user.residence"]


def test_speaker_given_as_a_name_prefix() -> None:
    [item] = extract(ChatTurn("user", "Caroline: I went to a support group yesterday.", "t1"))
    assert item.content == "Caroline went to a support group yesterday."
    [label] = extract(ChatTurn("user", "Update: I moved to Lisbon.", "t2"))
    assert label.content.startswith("The user lives in Lisbon")  # "Update" names nobody


def test_third_person_statements_are_extracted() -> None:
    got = extract(
        ChatTurn("user", "My partner Sam is allergic to nuts.", "t1"),
        ChatTurn("user", "Tom moved to Denver last year.", "t2", time=MONDAY),
    )
    assert contents(got) == [
        "The user's partner Sam is allergic to nuts.",
        "Tom moved to Denver last year.",
    ]


def test_references_stated_without_an_owner_are_the_persons() -> None:
    got = extract(
        ChatTurn("user", "Paid already. The order ID is 55-2013-88.", "t1"),
        ChatTurn("user", "The confirmation code is QX7PL2!", "t2", "Dana"),
        ChatTurn("user", "The weather is nice today.", "t3", "Dana"),
    )
    assert contents(got) == [
        "The user paid already. The user's order ID is 55-2013-88.",
        "Dana's confirmation code is QX7PL2.",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Wow, that's so cool!",
        "I'm so proud of you!",
        "Thanks for having my back!",
        "Can't wait to see it!",
        "What did you do this weekend?",
        "If I had more time, I would learn the cello.",
        "Don't forget to take breaks.",
        "I have a quick question about my invoice.",
        "Please call me tomorrow.",
        "Next Friday works.",
        "Tough times can be a gateway to great things.",
    ],
)
def test_remarks_questions_and_advice_are_not_memories(text: str) -> None:
    assert extract(ChatTurn("user", text, "t1", "Jon", MONDAY)) == []


def test_one_story_of_a_turn_is_one_memory() -> None:
    [item] = extract(
        ChatTurn(
            "user",
            "I went hiking in the Alps last month. We climbed the Zugspitze with my brother.",
            "t1",
            "Ana",
            MONDAY,
        )
    )
    assert item.content == (
        "Ana went hiking in the Alps in April 2023. Ana and others climbed the Zugspitze "
        "with Ana's brother."
    )


def test_extraction_is_deterministic() -> None:
    assert extract(*TRAVEL) == extract(*TRAVEL)


def test_two_people_never_supersede_each_other(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    result = m.ingest(
        [
            {"role": "user", "content": "I live in Oslo.", "metadata": {"speaker": "Jon"}},
            {"role": "assistant", "content": "I live in Rome.", "metadata": {"speaker": "Gina"}},
            {"role": "user", "content": "I moved to Bergen.", "metadata": {"speaker": "Jon"}},
        ]
    )
    assert (result.memories_created, result.memories_superseded) == (3, 1)
    live = sorted(
        r[0]
        for r in mem.records.read(
            "SELECT content FROM memories WHERE kind = 'memory' AND superseded_by IS NULL"
        )
    )
    assert live == ["Gina lives in Rome.", "Jon lives in Bergen (Jon moved to Bergen)."]


# -- judge -----------------------------------------------------------------------------------


def test_judge_compares_the_same_person_only() -> None:
    verdicts = OfflineLLM().judge(
        "Jon lives in Bergen (Jon moved to Bergen).",
        [("oslo", "Jon lives in Oslo."), ("rome", "Gina lives in Rome."), ("old", "I live in X")],
    )
    assert [v.decision for v in verdicts] == ["SUPERSEDE", "KEEP", "SUPERSEDE"]


# -- summaries -------------------------------------------------------------------------------


def _long_session() -> list[ChatTurn]:
    turns = [ChatTurn("user", "I'm vegan and I have a peanut allergy.", "c1", "Nora", MONDAY)]
    for i in range(30):
        turns.append(
            ChatTurn(
                "user",
                f"I visited the museum number {i} in Vienna and loved the paintings there.",
                f"m{i}",
                "Nora",
                MONDAY,
            )
        )
    turns.append(ChatTurn("user", "Our budget for the trip is 900 euros.", "b1", "Nora", MONDAY))
    turns.append(ChatTurn("user", "We raised the budget to 1200 euros.", "b2", "Nora", MONDAY))
    return turns


def test_summary_keeps_constraints_and_the_latest_value_within_the_limit() -> None:
    summary = OfflineLLM().summarize(_long_session(), max_words=60)
    assert len(summary.split()) <= 60
    assert summary.startswith("Nora talked on 8 May 2023.")
    assert "vegan" in summary and "peanut allergy" in summary
    assert "1200 euros" in summary and "900 euros" not in summary
    assert " I " not in f" {summary} "


def test_summary_latest_value_by_topic_key() -> None:
    summary = OfflineLLM().summarize(
        [
            ChatTurn("user", "I live in Berlin.", "t1"),
            ChatTurn("user", "Big news: I moved to Lisbon.", "t2"),
        ]
    )
    assert "Lisbon" in summary and "Berlin" not in summary


def test_summary_word_limit_holds_for_any_budget() -> None:
    llm = OfflineLLM()
    for budget in (5, 12, 40, 200):
        assert len(llm.summarize(_long_session(), max_words=budget).split()) <= budget


# -- answers ---------------------------------------------------------------------------------


def test_answer_is_never_the_question(shared_embedder: CachedEmbedder) -> None:
    llm = OfflineLLM(shared_embedder)
    ans = llm.answer(
        "Where does Priya live?",
        [("q", "Where does Priya live?"), ("a", "Priya lives in Leeds (Priya moved in 2021).")],
    )
    assert ans.used_ids == ("a",) and "Leeds" in ans.text


def test_answer_is_never_a_superseded_statement(shared_embedder: CachedEmbedder) -> None:
    llm = OfflineLLM(shared_embedder)
    ans = llm.answer(
        "What is the budget for the trip?",
        [
            ("old", "Nora's budget for the trip is 900 euros."),
            ("new", "Nora and others raised the budget to 1200 euros."),
        ],
    )
    assert ans.used_ids == ("new",) and "1200" in ans.text and "900" not in ans.text


def test_answer_reads_chat_messages_with_their_speaker(shared_embedder: CachedEmbedder) -> None:
    llm = OfflineLLM(shared_embedder)
    ans = llm.answer(
        "Who did Maria meet while volunteering?",
        [("m1", "Maria: Thanks so much!"), ("m2", "Maria: While volunteering I met Jean.")],
    )
    assert ans.text == "While volunteering Maria met Jean." and ans.used_ids == ("m2",)


def test_answer_prefers_the_kind_of_answer_asked_for(shared_embedder: CachedEmbedder) -> None:
    llm = OfflineLLM(shared_embedder)
    ans = llm.answer(
        "When did Caroline pass the adoption interview?",
        [
            ("a", "Caroline is nervous about the adoption interview."),
            ("b", "Caroline passed the adoption interview on 20 October 2023."),
        ],
    )
    assert ans.used_ids == ("b",)


def test_answer_brings_the_sentence_a_pronoun_points_to(shared_embedder: CachedEmbedder) -> None:
    llm = OfflineLLM(shared_embedder)
    ans = llm.answer(
        "How was the concert?",
        [("c", "Mia went to a Coldplay concert. It was loud but amazing, a great concert.")],
    )
    assert ans.text.startswith("Mia went to a Coldplay concert.")


def test_answer_is_empty_without_relevant_evidence(shared_embedder: CachedEmbedder) -> None:
    llm = OfflineLLM(shared_embedder)
    memories = [("d", "The user is vegetarian."), ("t", "Thanks, that's great!")]
    assert llm.answer("What is the capital of Mongolia?", memories).text == ""
    assert llm.answer("Any plans?", [("t", "Thanks, that's great!")]).text == ""

"""The keyword index does not mangle text that is not English: no English stemming or stop
words on German, Spanish or French, Japanese cut into character pairs; English exactly as
before."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import tantivy

from agentmem.evaluation import golden_dataset_path, load_dataset
from agentmem.recall.request import RecallRequest
from agentmem.storage.keyword_index import build_analyzer
from agentmem.storage.language import cjk_bigrams, language


def test_language_of_a_text() -> None:
    assert language("Meine Schwester wohnt in Lissabon und arbeitet als Lehrerin") == "de"
    assert language("¿Dónde trabaja mi hermano ahora?") == "es"
    assert language("Je conduis une vieille Renault Clio grise.") == "fr"
    assert language("東京の天気は晴れです") == "cjk"
    # English, whatever it quotes or names: stemmed as before
    assert language("My sister moved to Lisbon; she says 'obrigada' a lot") == "en"
    assert language("a naïve approach to the résumé of Café de Flore") == "en"
    log = "Mon 09:00 node-pool-a-1 pas-through memory 13210Mi of 16000Mi used, pods evicted: none"
    assert language(log) == "en"
    assert language("") == language("12345") == "en"


def test_every_english_text_of_the_golden_set_is_english() -> None:
    cases = load_dataset(golden_dataset_path()).cases
    texts = [c.query for c in cases] + [m.content for c in cases for m in c.setup]
    assert {language(t) for t in texts} == {"en"}


def test_cjk_bigrams() -> None:
    assert cjk_bigrams("東京の天気") == " 東京 京の の天 天気 "
    assert cjk_bigrams("Tokyo 駅 at 9") == "Tokyo  駅  at 9"


def _terms(make_memory: Any, text: str) -> list[str]:
    return list(make_memory(background=False).keywords.analyze(text))


def test_analysis_per_language(make_memory: Any) -> None:
    mem = make_memory(background=False)
    analyze = mem.keywords.analyze
    # English: as the analyzer always did (stemmed, stop words out)
    for text in ("running shoes for the marathons", "What did Alice say about the trip?"):
        assert analyze(text) == list(build_analyzer().analyze(text))
    # German: no English stemmer, no English stop words ("was" is "what")
    assert analyze("Was isst meine Tochter gerne in ihren Häusern?") == [
        "was", "isst", "meine", "tochter", "gerne", "in", "ihren", "hausern",
    ]  # fmt: skip
    # Japanese: a sentence longer than the 40-byte token limit is not dropped
    terms = analyze("毎朝ご飯と味噌汁を食べています。")
    assert "味噌" in terms and "噌汁" in terms


def test_non_english_rows_are_found_by_keyword(make_memory: Any) -> None:
    mem = make_memory(background=False)
    m = mem.bind("t", user_id="u")
    facts = {
        "ja": "娘は毎週土曜日にピアノのレッスンに通っています。",
        "de": "Meine Tochter nimmt seit letztem Jahr Geigenunterricht.",
        "en": "The kids have swimming lessons on Saturday mornings.",
    }
    for fact in facts.values():
        m.remember(fact)
    mem.flush()

    def keyword(query: str) -> list[str]:
        req = RecallRequest(
            query=query, top_k=10, scope="any", kinds=None, memory_types=None, rerank=False,
            min_score=0.0, token_budget=10**6, filters={}, retrievers=("keyword",),
        )  # fmt: skip
        ranked, visible, _ = mem.engine.candidates(m.identity, req)
        return [visible[c.id][1].content for c in ranked]

    assert keyword("ピアノのレッスンはいつですか") == [facts["ja"]]
    assert keyword("Geigenunterricht") == [facts["de"]]
    assert keyword("swimming lesson") == [facts["en"]]  # stemmed: lessons -> lesson


def test_a_keyword_index_of_the_older_schema_is_rebuilt(make_memory: Any) -> None:
    mem = make_memory(background=False)
    m = mem.bind("t", user_id="u")
    m.remember("The staging database runs on host db-stage-04")
    mem.flush()
    home: Path = mem.home
    mem.close()
    # the one-field schema of earlier versions
    old = home / "keywords"
    shutil.rmtree(old)
    old.mkdir()
    builder = tantivy.SchemaBuilder()
    for name in ("id", "tenant", "partition", "session", "kind", "memory_type", "scope"):
        builder.add_text_field(name, stored=(name == "id"), tokenizer_name="raw")
    builder.add_text_field("content", stored=False)
    index = tantivy.Index(builder.build(), path=str(old))
    writer = index.writer()
    writer.commit()
    writer.wait_merging_threads()
    del writer, index
    again = make_memory(path=home, background=False)
    assert any("another version" in note for note in again.recovered)
    again.flush()
    hits = again.bind("t", user_id="u").recall("db-stage-04").items
    assert [h.content for h in hits] == ["The staging database runs on host db-stage-04"]
    assert again.keywords.num_docs() == 1


@pytest.mark.parametrize("text", ["Häuser", "canciones", "mangées"])
def test_english_stemming_would_have_changed_these(text: str) -> None:
    """What the change is about: the English analyzer rewrites words of other languages."""
    english = next(iter(build_analyzer().analyze(f"{text} {text}")))
    assert english != text.lower()

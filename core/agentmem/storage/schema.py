"""The SQLite schema of the records store, as an ordered list of migrations.

A data dir records which migrations it has seen (``schema_version``); opening it applies the
rest, each in one transaction. Migrations are never edited once released: a change is a new
migration at the end.
"""

from __future__ import annotations

MIGRATIONS: list[str] = [
    # 1: initial schema
    """
    CREATE TABLE memories (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        session_id TEXT,
        kind TEXT NOT NULL,
        memory_type TEXT,
        scope TEXT NOT NULL,
        role TEXT,
        content TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        source_ref TEXT,
        topic_key TEXT,
        metadata TEXT NOT NULL DEFAULT '{}',
        importance REAL,
        event_time TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        access_count INTEGER NOT NULL DEFAULT 0,
        last_accessed TEXT,
        superseded_by TEXT,
        deleted_at TEXT,
        anonymized_at TEXT,
        partition TEXT NOT NULL,
        dedup_key TEXT UNIQUE,
        keyword_indexed INTEGER NOT NULL DEFAULT 0,
        embedded INTEGER NOT NULL DEFAULT 0,
        kw_pending INTEGER NOT NULL DEFAULT 1,
        vec_pending INTEGER NOT NULL DEFAULT 1,
        embed_attempts INTEGER NOT NULL DEFAULT 0,
        embed_error TEXT
    );
    CREATE INDEX memories_tenant_partition ON memories (tenant_id, partition);
    CREATE INDEX memories_session ON memories (tenant_id, session_id, seq);
    CREATE INDEX memories_source_ref ON memories (tenant_id, source_ref);
    CREATE INDEX memories_topic ON memories (tenant_id, partition, topic_key)
        WHERE topic_key IS NOT NULL;
    CREATE INDEX memories_kw_pending ON memories (seq) WHERE kw_pending = 1;
    CREATE INDEX memories_vec_pending ON memories (partition, seq) WHERE vec_pending != 0;
    CREATE TABLE payloads (
        key TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        content TEXT NOT NULL
    );
    CREATE TABLE partitions (
        tenant_id TEXT NOT NULL,
        partition TEXT NOT NULL,
        collection TEXT NOT NULL UNIQUE,
        PRIMARY KEY (tenant_id, partition)
    );
    CREATE TABLE audit_log (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,
        event TEXT NOT NULL,
        tenant_id TEXT NOT NULL,
        memory_id TEXT,
        detail TEXT NOT NULL DEFAULT '{}'
    );
    CREATE TABLE agent_state (
        tenant_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, agent_id, key)
    );
    """,
    # 2: derived memories: judge bookkeeping and which messages were extracted
    """
    ALTER TABLE memories ADD COLUMN judged_at TEXT;
    CREATE INDEX memories_judge_pending ON memories (seq)
        WHERE judged_at IS NULL AND kind = 'memory';
    CREATE INDEX memories_superseded_by ON memories (superseded_by)
        WHERE superseded_by IS NOT NULL;
    CREATE TABLE ingest_log (
        tenant_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        extractor TEXT NOT NULL,
        extracted_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, message_id)
    );
    """,
    # 3: tiers: tier of session-derived rows, closed sessions, working-memory state
    """
    ALTER TABLE memories ADD COLUMN tier TEXT;
    CREATE INDEX memories_tier ON memories (tenant_id, partition, session_id, tier)
        WHERE tier IS NOT NULL;
    CREATE TABLE sessions (
        tenant_id TEXT NOT NULL,
        partition TEXT NOT NULL,
        session_id TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        status TEXT NOT NULL DEFAULT 'closed',
        tier TEXT NOT NULL,
        close_order INTEGER NOT NULL,
        closed_at TEXT NOT NULL,
        promoted_at TEXT,
        last_seq INTEGER NOT NULL,
        message_count INTEGER NOT NULL,
        chunk_count INTEGER NOT NULL,
        summary_status TEXT NOT NULL,
        summarizer TEXT,
        summary_ids TEXT NOT NULL DEFAULT '[]',
        PRIMARY KEY (tenant_id, partition, session_id)
    );
    CREATE INDEX sessions_order ON sessions (tenant_id, partition, tier, close_order);
    CREATE TABLE working_state (
        tenant_id TEXT NOT NULL,
        partition TEXT NOT NULL,
        session_id TEXT NOT NULL,
        summary TEXT NOT NULL,
        boundary_seq INTEGER NOT NULL DEFAULT 0,
        held TEXT NOT NULL DEFAULT '[]',
        version INTEGER NOT NULL DEFAULT 0,
        compactions INTEGER NOT NULL DEFAULT 0,
        trips INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, partition, session_id)
    );
    """,
    # 4: indexes for the hot "what is left to embed" queries (exact partial-index predicates)
    """
    CREATE INDEX memories_vec_todo ON memories (seq) WHERE vec_pending IN (1, 2);
    CREATE INDEX memories_vec_todo_partition ON memories (partition, seq)
        WHERE vec_pending IN (1, 2);
    DROP INDEX memories_vec_pending;
    """,
    # 5: settings of the data dir itself, e.g. the fingerprint of the embedder of its vectors
    """
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    """,
    # 6: API keys of the server (``agentmem keys``); only a hash of each secret is stored
    """
    CREATE TABLE IF NOT EXISTS api_keys (
        id TEXT PRIMARY KEY,
        secret_hash TEXT NOT NULL,
        tenant_id TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        name TEXT,
        admin INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        revoked_at TEXT
    );
    CREATE INDEX IF NOT EXISTS api_keys_tenant ON api_keys (tenant_id);
    """,
    # 7: forgetting and erasure. ``forgotten_at`` marks a tombstone (a forgotten row keeps its
    # ids, kind and times, nothing else); ``memory_sources`` links a derived row (an extracted
    # memory, a session chunk or summary) to each message it was made from, so forgetting a
    # message reaches them (filled from the rows' metadata for rows stored before); each
    # erasure of an identity is logged in ``erasures`` (ids and counts, no content) while it
    # runs, so an interrupted one is finished at the next open, and after, for ``doctor``.
    """
    ALTER TABLE memories ADD COLUMN forgotten_at TEXT;
    CREATE TABLE memory_sources (
        tenant_id TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        source_id TEXT NOT NULL,
        PRIMARY KEY (tenant_id, source_id, memory_id)
    );
    CREATE INDEX memory_sources_memory ON memory_sources (memory_id);
    INSERT INTO memory_sources (tenant_id, memory_id, source_id)
        SELECT DISTINCT m.tenant_id, m.id, s.value
        FROM memories AS m, json_each(m.metadata, '$.source_message_ids') AS s
        WHERE m.kind = 'memory' AND s.type = 'text'
        ON CONFLICT DO NOTHING;
    INSERT INTO memory_sources (tenant_id, memory_id, source_id)
        SELECT DISTINCT m.tenant_id, m.id, s.value
        FROM memories AS m, json_each(m.metadata, '$.message_ids') AS s
        WHERE m.tier IS NOT NULL AND s.type = 'text'
        ON CONFLICT DO NOTHING;
    CREATE TABLE erasures (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        status TEXT NOT NULL,
        started_at TEXT NOT NULL,
        completed_at TEXT,
        collections TEXT NOT NULL DEFAULT '[]',
        removed TEXT NOT NULL DEFAULT '{}'
    );
    """,
    # 8: what recall scores of a row's text, written by the keyword indexer so that recall
    # does not analyse every candidate again: its analysed terms (distinct, space-separated),
    # how many terms it has, and its content's token count. NULL until the row is indexed
    # (rows of older data dirs are filled in the background; recall computes missing ones).
    """
    ALTER TABLE memories ADD COLUMN kw_terms TEXT;
    ALTER TABLE memories ADD COLUMN kw_term_count INTEGER;
    ALTER TABLE memories ADD COLUMN content_tokens INTEGER;
    INSERT INTO meta (key, value, updated_at)
        SELECT 'text_features_complete', '1', CURRENT_TIMESTAMP
        WHERE NOT EXISTS (SELECT 1 FROM memories)
        ON CONFLICT (key) DO NOTHING;
    """,
    # 9: server-operator keys: they also read the server-wide views (``GET /metrics``)
    """
    ALTER TABLE api_keys ADD COLUMN operator INTEGER NOT NULL DEFAULT 0;
    """,
    # 10: the user an agent-state entry is about (NULL: the agent's own), set by the writer
    # when a value is kept for one user (a LangGraph store's item of that user's namespace);
    # erasing that user deletes the entry with the user's other rows
    """
    ALTER TABLE agent_state ADD COLUMN user_id TEXT;
    CREATE INDEX agent_state_user ON agent_state (tenant_id, user_id)
        WHERE user_id IS NOT NULL;
    """,
    # 11: the agent an agent-state entry is about, when another than the agent keeping it
    # (a LangGraph store's item of that agent's namespace); erasing that agent deletes it
    """
    ALTER TABLE agent_state ADD COLUMN about_agent_id TEXT;
    CREATE INDEX agent_state_about_agent ON agent_state (tenant_id, about_agent_id)
        WHERE about_agent_id IS NOT NULL;
    """,
]


def _postgres(sql: str) -> str:
    """A shared migration in PostgreSQL's types: 64-bit keys and counters, double floats."""
    return (
        sql.replace("INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY")
        .replace("INTEGER", "BIGINT")
        .replace("REAL", "DOUBLE PRECISION")
    )


def _without_backfill(sql: str) -> str:
    """Migration 7 without its backfill from SQLite's JSON functions: a Postgres records
    store starts at this schema (Postgres support came later), so it has nothing to fill."""
    start = sql.index("INSERT INTO memory_sources")
    end = sql.index("CREATE TABLE erasures")
    return sql[:start] + sql[end:]


#: The Postgres schema: the shared migrations in Postgres types, then what only a shared,
#: multi-node records store needs.
POSTGRES_MIGRATIONS: list[str] = [
    *(_postgres(m) for m in MIGRATIONS[:6]),
    _postgres(_without_backfill(MIGRATIONS[6])),
    _postgres(MIGRATIONS[7]),
    # 9: the change sequence and the embedding claims. Every node follows ``change_seq``
    # into its own keyword index (its progress in ``index_progress``); a write asks for a
    # keyword update by setting ``kw_pending = 1``, which this trigger turns into the next
    # change number (the flag itself stays 0: keyword progress is per node, not per row)
    # and a notification. A row deleted outright (an erasure) leaves its id and a change
    # number in ``memory_deletions`` (no content), so each node removes its keyword entry.
    # ``vec_claim_*`` lease a row to the one node embedding it.
    """
    ALTER TABLE memories ADD COLUMN change_seq BIGINT;
    ALTER TABLE memories ADD COLUMN vec_claim_node TEXT;
    ALTER TABLE memories ADD COLUMN vec_claim_until TIMESTAMPTZ;
    CREATE SEQUENCE memories_change_seq;
    UPDATE memories SET change_seq = nextval('memories_change_seq'), kw_pending = 0;
    CREATE INDEX memories_change ON memories (change_seq);
    CREATE INDEX memories_change_partition ON memories (tenant_id, partition, change_seq);
    CREATE TABLE index_progress (
        node_id TEXT PRIMARY KEY,
        keyword_seq BIGINT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE FUNCTION agentmem_memory_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' OR NEW.kw_pending = 1 THEN
            NEW.change_seq := nextval('memories_change_seq');
            NEW.kw_pending := 0;
            PERFORM pg_notify('agentmem_changes', '');
        ELSIF NEW.vec_pending = 1 AND OLD.vec_pending != 1 THEN
            PERFORM pg_notify('agentmem_changes', '');
        END IF;
        RETURN NEW;
    END
    $$;
    CREATE TRIGGER memories_changed BEFORE INSERT OR UPDATE ON memories
        FOR EACH ROW EXECUTE FUNCTION agentmem_memory_changed();
    CREATE TABLE memory_deletions (
        change_seq BIGINT PRIMARY KEY,
        id TEXT NOT NULL
    );
    CREATE FUNCTION agentmem_memory_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO memory_deletions (change_seq, id)
            VALUES (nextval('memories_change_seq'), OLD.id);
        PERFORM pg_notify('agentmem_changes', '');
        RETURN OLD;
    END
    $$;
    CREATE TRIGGER memories_deleted AFTER DELETE ON memories
        FOR EACH ROW EXECUTE FUNCTION agentmem_memory_deleted();
    """,
    # 10: changes in commit-safe order. Writes of different keys run at the same time, so
    # change numbers no longer commit in order; each change also records its transaction
    # (``change_xid``, the full 64-bit id) and a node's position is (transaction, number):
    # it reads only changes of transactions that have ended (see IndexQueue). Rows and
    # positions from before start at transaction 0, where the old positions hold as they were.
    """
    ALTER TABLE memories ADD COLUMN change_xid BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE memory_deletions ADD COLUMN change_xid BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE index_progress ADD COLUMN keyword_xid BIGINT NOT NULL DEFAULT 0;
    DROP INDEX memories_change;
    DROP INDEX memories_change_partition;
    CREATE INDEX memories_change ON memories (change_xid, change_seq);
    CREATE INDEX memories_change_partition ON memories
        (tenant_id, partition, change_xid, change_seq);
    CREATE INDEX memory_deletions_change ON memory_deletions (change_xid, change_seq);
    CREATE OR REPLACE FUNCTION agentmem_memory_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' OR NEW.kw_pending = 1 THEN
            NEW.change_seq := nextval('memories_change_seq');
            NEW.change_xid := pg_current_xact_id()::text::bigint;
            NEW.kw_pending := 0;
            PERFORM pg_notify('agentmem_changes', '');
        ELSIF NEW.vec_pending = 1 AND OLD.vec_pending != 1 THEN
            PERFORM pg_notify('agentmem_changes', '');
        END IF;
        RETURN NEW;
    END
    $$;
    CREATE OR REPLACE FUNCTION agentmem_memory_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO memory_deletions (change_seq, change_xid, id)
            VALUES (nextval('memories_change_seq'), pg_current_xact_id()::text::bigint, OLD.id);
        PERFORM pg_notify('agentmem_changes', '');
        RETURN OLD;
    END
    $$;
    """,
    # 11: server-operator keys (SQLite migration 9)
    _postgres(MIGRATIONS[8]),
    # 12: the user an agent-state entry is about (SQLite migration 10)
    _postgres(MIGRATIONS[9]),
    # 13: the agent an agent-state entry is about (SQLite migration 11)
    _postgres(MIGRATIONS[10]),
]

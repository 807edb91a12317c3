/**
 * Numbered, idempotent schema migrations. `user_version` records the last one applied;
 * each runs in its own transaction. Append new migrations; never edit an applied one.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/**
 * SQL that takes the archive row `row` (`old` in a trigger) out of the contentless index of
 * migration 11: FTS5's 'delete' command, given the row's text again so the totals bm25 weighs by
 * lose it too.
 */
function archiveIndexDeleteSql(row: string): string {
  return `INSERT INTO archive_fts (archive_fts, rowid, body, handle, session_id)
          SELECT 'delete', rowid, ${archiveBodySql(`${row}.messages`)}, ${row}.handle, ${row}.session_id FROM archive_fts WHERE handle = ${row}.handle;`;
}

/** SQL that puts the archive row `row` (`new` in a trigger) into the archive index (migrations 3 and 11). */
function archiveIndexInsertSql(row: string): string {
  return `INSERT INTO archive_fts (body, handle, session_id) VALUES (${archiveBodySql(`${row}.messages`)}, ${row}.handle, ${row}.session_id);`;
}

/**
 * SQL expression for the searchable text of an archive row's `messages` JSON: every message's
 * text and reasoning, tool names, and each tool call's name and arguments, newline-joined.
 */
function archiveBodySql(messages: string): string {
  return `(SELECT group_concat(part, char(10)) FROM (
      SELECT json_extract(m.value, '$.text') AS part FROM json_each(${messages}) m
      UNION ALL SELECT json_extract(m.value, '$.reasoning') FROM json_each(${messages}) m
      UNION ALL SELECT json_extract(m.value, '$.toolName') FROM json_each(${messages}) m
      UNION ALL SELECT json_extract(c.value, '$.name') || ' ' || json_extract(c.value, '$.arguments')
        FROM json_each(${messages}) m, json_each(m.value, '$.toolCalls') c
    ))`;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'sessions, headroom log, archive, plans',
    sql: `
      CREATE TABLE IF NOT EXISTS sessions (
        session_id   TEXT PRIMARY KEY,
        file         TEXT NOT NULL,
        format       TEXT NOT NULL,
        first_seen   INTEGER NOT NULL,
        last_seen    INTEGER NOT NULL,
        status       TEXT NOT NULL DEFAULT 'live',
        outcome      TEXT,
        ended_at     INTEGER
      );
      CREATE TABLE IF NOT EXISTS headroom_samples (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id  TEXT NOT NULL,
        at          INTEGER NOT NULL,
        tokens      INTEGER NOT NULL,
        total       INTEGER NOT NULL,
        reserve_ratio REAL NOT NULL,
        headroom    REAL NOT NULL,
        sections    INTEGER NOT NULL,
        reported_tokens INTEGER,
        reason      TEXT NOT NULL,
        file        TEXT
      );
      CREATE INDEX IF NOT EXISTS headroom_by_session ON headroom_samples(session_id, at);
      CREATE TABLE IF NOT EXISTS archive (
        handle      TEXT PRIMARY KEY,
        session_id  TEXT NOT NULL,
        plan_id     TEXT,
        edit_id     TEXT,
        reason      TEXT NOT NULL,
        section_ids TEXT NOT NULL,
        messages    TEXT NOT NULL,
        tokens      INTEGER NOT NULL,
        created_at  INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS archive_by_session ON archive(session_id);
      CREATE TABLE IF NOT EXISTS plans (
        plan_id     TEXT PRIMARY KEY,
        session_id  TEXT NOT NULL,
        created_at  INTEGER NOT NULL,
        status      TEXT NOT NULL,
        status_reason TEXT,
        headroom_before REAL NOT NULL,
        headroom_after  REAL NOT NULL,
        plan        TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS plans_by_session ON plans(session_id, created_at);
    `,
  },
  {
    version: 2,
    name: 'warm templates, items, knowledge, user patterns, harvested sessions',
    sql: `
      CREATE TABLE IF NOT EXISTS templates (
        template_id     TEXT PRIMARY KEY,
        schema_version  INTEGER NOT NULL,
        name            TEXT NOT NULL,
        task_type       TEXT NOT NULL,
        repo            TEXT NOT NULL DEFAULT '',
        task            TEXT NOT NULL,
        system_digest   TEXT NOT NULL DEFAULT '',
        fingerprint     TEXT NOT NULL,
        value_score     REAL NOT NULL,
        value_breakdown TEXT NOT NULL,
        session_count   INTEGER NOT NULL DEFAULT 0,
        usage_count     INTEGER NOT NULL DEFAULT 0,
        success_count   INTEGER NOT NULL DEFAULT 0,
        failure_count   INTEGER NOT NULL DEFAULT 0,
        created_at      INTEGER NOT NULL,
        updated_at      INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS templates_by_repo ON templates(repo, task_type);
      CREATE TABLE IF NOT EXISTS template_sessions (
        template_id  TEXT NOT NULL REFERENCES templates(template_id) ON DELETE CASCADE,
        session_id   TEXT NOT NULL,
        source       TEXT NOT NULL DEFAULT '',
        outcome      TEXT NOT NULL,
        value_score  REAL NOT NULL,
        harvested_at INTEGER NOT NULL,
        PRIMARY KEY (template_id, session_id)
      );
      CREATE TABLE IF NOT EXISTS template_items (
        item_id      INTEGER PRIMARY KEY AUTOINCREMENT,
        template_id  TEXT NOT NULL REFERENCES templates(template_id) ON DELETE CASCADE,
        kind         TEXT NOT NULL,
        category     TEXT NOT NULL DEFAULT '',
        text         TEXT NOT NULL,
        data         TEXT,
        norm_hash    TEXT NOT NULL,
        evidence     INTEGER NOT NULL DEFAULT 1,
        last_session TEXT,
        created_at   INTEGER NOT NULL,
        updated_at   INTEGER NOT NULL,
        UNIQUE (template_id, kind, norm_hash)
      );
      CREATE TABLE IF NOT EXISTS knowledge (
        knowledge_id INTEGER PRIMARY KEY AUTOINCREMENT,
        repo         TEXT NOT NULL DEFAULT '',
        category     TEXT NOT NULL,
        text         TEXT NOT NULL,
        norm_hash    TEXT NOT NULL,
        evidence     INTEGER NOT NULL DEFAULT 1,
        last_session TEXT,
        created_at   INTEGER NOT NULL,
        updated_at   INTEGER NOT NULL,
        UNIQUE (repo, norm_hash)
      );
      CREATE TABLE IF NOT EXISTS template_knowledge (
        template_id  TEXT NOT NULL REFERENCES templates(template_id) ON DELETE CASCADE,
        knowledge_id INTEGER NOT NULL REFERENCES knowledge(knowledge_id) ON DELETE CASCADE,
        PRIMARY KEY (template_id, knowledge_id)
      );
      CREATE TABLE IF NOT EXISTS user_patterns (
        norm_hash     TEXT PRIMARY KEY,
        kind          TEXT NOT NULL,
        text          TEXT NOT NULL,
        repo          TEXT NOT NULL DEFAULT '',
        session_count INTEGER NOT NULL,
        sessions      TEXT NOT NULL,
        first_seen    INTEGER NOT NULL,
        last_seen     INTEGER NOT NULL
      );
      CREATE TABLE IF NOT EXISTS harvested_sessions (
        session_id    TEXT PRIMARY KEY,
        template_id   TEXT,
        message_count INTEGER NOT NULL,
        value_score   REAL NOT NULL,
        skipped       TEXT,
        harvested_at  INTEGER NOT NULL
      );
      CREATE VIRTUAL TABLE IF NOT EXISTS templates_fts USING fts5(body);
    `,
  },
  {
    version: 3,
    name: 'full-text index over archived originals (archive.search)',
    // One FTS5 row per archive row, its body the archived messages' text, tool names and tool
    // call arguments, extracted from the JSON in SQL so an archive write stays one statement
    // from the caller's side. The handle is kept as an unindexed column rather than relying on
    // the archive's implicit rowid, which VACUUM may renumber. Existing rows are indexed here.
    sql: `
      CREATE VIRTUAL TABLE IF NOT EXISTS archive_fts USING fts5(
        body, handle UNINDEXED, session_id UNINDEXED,
        tokenize = 'porter unicode61 remove_diacritics 2'
      );
      CREATE TRIGGER IF NOT EXISTS archive_fts_insert AFTER INSERT ON archive BEGIN
        ${archiveIndexInsertSql('new')}
      END;
      CREATE TRIGGER IF NOT EXISTS archive_fts_delete AFTER DELETE ON archive BEGIN
        DELETE FROM archive_fts WHERE handle = old.handle;
      END;
      CREATE TRIGGER IF NOT EXISTS archive_fts_update AFTER UPDATE OF messages, session_id ON archive BEGIN
        DELETE FROM archive_fts WHERE handle = old.handle;
        ${archiveIndexInsertSql('new')}
      END;
      DELETE FROM archive_fts WHERE handle NOT IN (SELECT handle FROM archive);
      INSERT INTO archive_fts (body, handle, session_id)
        SELECT ${archiveBodySql('a.messages')}, a.handle, a.session_id FROM archive a
        WHERE a.handle NOT IN (SELECT handle FROM archive_fts);
    `,
  },
  {
    version: 4,
    name: 'archive: what was redacted from each archived original',
    sql: `
      ALTER TABLE archive ADD COLUMN redactions TEXT NOT NULL DEFAULT '[]';
    `,
  },
  {
    version: 5,
    name: 'token counts of messages by content hash',
    sql: `
      CREATE TABLE IF NOT EXISTS token_counts (
        encoding TEXT NOT NULL,
        hash     BLOB NOT NULL,
        counts   BLOB NOT NULL,
        PRIMARY KEY (encoding, hash)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 6,
    name: 'harvested sessions: content hash (a transcript harvested twice counts once)',
    // Rows harvested before this have no hash: they are still found by session id.
    sql: `
      ALTER TABLE harvested_sessions ADD COLUMN content_hash TEXT;
      CREATE INDEX IF NOT EXISTS harvested_by_content ON harvested_sessions(content_hash);
    `,
  },
  {
    version: 7,
    name: 'derived data of messages (term stats, fingerprints) by content hash',
    // id orders rows by write, for the size bound (store/derived-data.ts).
    sql: `
      CREATE TABLE IF NOT EXISTS derived_data (
        id       INTEGER PRIMARY KEY,
        hash     BLOB NOT NULL UNIQUE,
        version  INTEGER NOT NULL,
        data     BLOB NOT NULL
      );
    `,
  },
  {
    version: 8,
    name: 'derived data rows unique by (hash, version), not hash alone',
    // Two builds of different derivations sharing a state folder replaced each other's rows
    // (INSERT OR REPLACE on the hash), and each replacement took a new id, which the size bound
    // prunes by. The rows are copied with their ids; the daemon deletes other versions' rows
    // when it starts (store/derived-data.ts deleteOtherVersions).
    sql: `
      CREATE TABLE derived_data_by_version (
        id       INTEGER PRIMARY KEY,
        hash     BLOB NOT NULL,
        version  INTEGER NOT NULL,
        data     BLOB NOT NULL,
        UNIQUE (hash, version)
      );
      INSERT INTO derived_data_by_version (id, hash, version, data) SELECT id, hash, version, data FROM derived_data;
      DROP TABLE derived_data;
      ALTER TABLE derived_data_by_version RENAME TO derived_data;
    `,
  },
  {
    version: 9,
    name: 'plans: the edits the agent applied and the transcript offset they were applied at',
    // What a released session's model is rebuilt with besides its transcript (daemon/replay-log.ts):
    // its lines up to each offset, then that plan's chosen edits. Rows from before have neither
    // (NULL): their sessions were never released with those edits.
    sql: `
      ALTER TABLE plans ADD COLUMN applied_edit_ids TEXT;
      ALTER TABLE plans ADD COLUMN applied_offset INTEGER;
    `,
  },
  {
    version: 10,
    name: 'plan bodies in a table of their own',
    // SQLite rewrites a whole row on UPDATE, body and all: every ack (a status change) rewrote
    // the plan's JSON, tens of KB in overflow pages. Now an ack rewrites the small status row.
    sql: `
      CREATE TABLE plan_bodies (
        plan_id TEXT PRIMARY KEY,
        plan    TEXT NOT NULL
      );
      INSERT INTO plan_bodies (plan_id, plan) SELECT plan_id, plan FROM plans;
      ALTER TABLE plans DROP COLUMN plan;
    `,
  },
  {
    version: 11,
    name: 'archive index without a second copy of every archived text',
    // An FTS5 table keeps a copy of each row's text beside its index (archive_fts_content): as
    // large as the archive itself, and written with every archived original (a load of 50
    // sessions wrote 25 MB of each in 20 s). Search reads only the index, the handle and the
    // session, so the index is now contentless: the text is not stored, the two unindexed
    // columns are (contentless_unindexed, SQLite 3.48+). A row leaves the index by FTS5's
    // 'delete' command given its old text again (derived from the archive row being deleted or
    // updated), which also takes it out of the totals bm25 weighs by (contentless_delete would
    // leave them, and every score would drift). Rebuilt from the archive's rows, as migration 3
    // built it.
    sql: `
      DROP TRIGGER IF EXISTS archive_fts_insert;
      DROP TRIGGER IF EXISTS archive_fts_delete;
      DROP TRIGGER IF EXISTS archive_fts_update;
      DROP TABLE IF EXISTS archive_fts;
      CREATE VIRTUAL TABLE archive_fts USING fts5(
        body, handle UNINDEXED, session_id UNINDEXED,
        content = '', contentless_unindexed = 1,
        tokenize = 'porter unicode61 remove_diacritics 2'
      );
      CREATE TRIGGER archive_fts_insert AFTER INSERT ON archive BEGIN
        ${archiveIndexInsertSql('new')}
      END;
      CREATE TRIGGER archive_fts_delete AFTER DELETE ON archive BEGIN
        ${archiveIndexDeleteSql('old')}
      END;
      CREATE TRIGGER archive_fts_update AFTER UPDATE OF messages, session_id ON archive BEGIN
        ${archiveIndexDeleteSql('old')}
        ${archiveIndexInsertSql('new')}
      END;
      INSERT INTO archive_fts (body, handle, session_id) SELECT ${archiveBodySql('a.messages')}, a.handle, a.session_id FROM archive a;
    `,
  },
  {
    version: 12,
    name: "model steps: what a tailed session's model holds besides its transcript, kept across restarts",
    // The steps of daemon/replay-log.ts (edits the agent applied, rebuilds from the model's own
    // messages), in order, per session: a restarted daemon replays them as a rebuild after a
    // release does, instead of building the model from its transcript alone. `seq` counts from
    // 0 with no gap; seq -1 marks a session whose steps cannot be replayed (`why`).
    sql: `
      CREATE TABLE model_steps (
        session_id TEXT NOT NULL,
        seq        INTEGER NOT NULL,
        kind       TEXT NOT NULL CHECK (kind IN ('edits', 'rebase', 'unreplayable')),
        plan_id    TEXT,
        offset     INTEGER,
        why        TEXT,
        PRIMARY KEY (session_id, seq)
      ) WITHOUT ROWID;
    `,
  },
];

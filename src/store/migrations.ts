/**
 * Numbered, idempotent schema migrations. `user_version` records the last one applied;
 * each runs in its own transaction. Append new migrations; never edit an applied one.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
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
];

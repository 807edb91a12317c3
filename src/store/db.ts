import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { ContextdError, ErrorCode, describeError } from '../util/errors.js';
import { MIGRATIONS, type Migration } from './migrations.js';

/** A better-sqlite3 handle; the store modules take it as their only dependency. */
export type Db = Database.Database;

export interface OpenDbOptions {
  /** Extra migrations appended after the built-in ones (tests, plugins). */
  readonly migrations?: readonly Migration[];
  /** Open read-only (CLI readers); no migrations are run. */
  readonly readonly?: boolean;
}

/**
 * Open (creating if needed) the SQLite state file in WAL mode and bring its schema up to date.
 * `:memory:` is accepted for throwaway stores.
 */
export function openDb(path: string, options: OpenDbOptions = {}): Db {
  if (path !== ':memory:' && !options.readonly) mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  let db: Db;
  try {
    db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
  } catch (err) {
    throw new ContextdError(ErrorCode.STORE_FAILED, `cannot open state database ${path}: ${describeError(err)}`, { path }, { cause: err });
  }
  try {
    db.pragma('busy_timeout = 5000');
    if (!options.readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma('foreign_keys = ON');
      migrate(db, [...MIGRATIONS, ...(options.migrations ?? [])]);
    }
  } catch (err) {
    db.close();
    throw wrapStoreError(err, `cannot prepare state database ${path}`);
  }
  return db;
}

/** Apply every migration newer than the database's `user_version`, each in its own transaction. */
export function migrate(db: Db, migrations: readonly Migration[]): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  const pending = [...migrations].filter((m) => m.version > current).sort((a, b) => a.version - b.version);
  for (const m of pending) {
    db.transaction(() => {
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    })();
  }
}

/** Map a SQLite failure to a coded error; a full disk or database becomes STORE_FULL. */
export function wrapStoreError(err: unknown, what: string): ContextdError {
  if (err instanceof ContextdError) return err;
  const code = (err as { code?: unknown }).code;
  const full = code === 'SQLITE_FULL' || code === 'SQLITE_IOERR_WRITE' || code === 'SQLITE_IOERR';
  return new ContextdError(full ? ErrorCode.STORE_FULL : ErrorCode.STORE_FAILED, `${what}: ${describeError(err)}`, { sqliteCode: code }, { cause: err });
}

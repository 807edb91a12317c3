import Database from 'better-sqlite3';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
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

let addonPath: string | undefined;

/**
 * better-sqlite3's compiled addon, handed to it directly. Its own lookup (the `bindings`
 * package) finds the package from the caller's stack frame and probes a dozen paths: that
 * fails where better-sqlite3's JavaScript is bundled (the hook's chunks in dist/hook, see
 * rolldown.config.js), searching contextd's own folders and naming paths that are not where the
 * addon belongs, and is start-up work besides. So there is no fallback: an addon missing from
 * its place (the package's build/Release/, where its install puts it) is a STORE_FAILED naming
 * that path.
 */
export function sqliteAddon(): string {
  if (addonPath !== undefined) return addonPath;
  let pkg: string;
  try {
    pkg = dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json'));
  } catch (err) {
    throw new ContextdError(ErrorCode.STORE_FAILED, `better-sqlite3 is not installed where contextd can find it: ${describeError(err)}`, {}, { cause: err });
  }
  const path = join(pkg, 'build', 'Release', 'better_sqlite3.node');
  if (!existsSync(path)) throw new ContextdError(ErrorCode.STORE_FAILED, `better-sqlite3's compiled addon is missing: expected ${path} (reinstall contextd's dependencies)`, { path });
  addonPath = path;
  return path;
}

/** What a WAL file is cut back to when a checkpoint lets it start over (`journal_size_limit`). */
export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * Open (creating if needed) the SQLite state file in WAL mode and bring its schema up to date.
 * `:memory:` is accepted for throwaway stores.
 */
export function openDb(path: string, options: OpenDbOptions = {}): Db {
  if (path !== ':memory:' && !options.readonly) {
    secureStateDir(dirname(path));
    secureStateFiles(path);
  }
  const nativeBinding = sqliteAddon();
  let db: Db;
  try {
    db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false, nativeBinding });
  } catch (err) {
    throw new ContextdError(ErrorCode.STORE_FAILED, `cannot open state database ${path}: ${describeError(err)}`, { path }, { cause: err });
  }
  try {
    db.pragma('busy_timeout = 5000');
    if (!options.readonly) {
      db.pragma('journal_mode = WAL');
      // A WAL file keeps its largest size after a burst of writes unless told otherwise: cut back
      // to this when a checkpoint lets it start over (under load it reached 157-202 MiB).
      db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
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

/** What `secureStateDir` did. */
export interface SecuredDir {
  readonly created: boolean;
  /** The mode the folder had when it was tightened to 0700 (undefined: it was private already). */
  readonly previousMode: number | undefined;
}

/**
 * Make the state folder private whatever the umask: create it 0700, or tighten an existing
 * one to 0700. A folder owned by another user is refused (its owner could read the archive).
 */
export function secureStateDir(dir: string): SecuredDir {
  let created = false;
  try {
    statSync(dir);
  } catch {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    created = true;
  }
  const st = statSync(dir);
  if (!st.isDirectory()) throw new ContextdError(ErrorCode.STATE_INSECURE, `state path ${dir} is not a directory; choose another --state`, { dir });
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) {
    throw new ContextdError(ErrorCode.STATE_INSECURE, `state folder ${dir} belongs to uid ${st.uid}, not to this user (uid ${uid}): contextd keeps its archive only in a folder it owns; choose another --state or chown it`, { dir, owner: st.uid, uid });
  }
  const mode = st.mode & 0o777;
  if ((mode & 0o077) === 0) return { created, previousMode: undefined };
  chmodSync(dir, 0o700);
  return { created, previousMode: mode };
}

/**
 * The database and its WAL/SHM files are 0600 whatever the umask: the file is created 0600
 * before SQLite opens it (SQLite gives -wal and -shm the database file's mode), and files left
 * by an earlier run are tightened.
 */
export function secureStateFiles(dbPath: string): void {
  closeSync(openSync(dbPath, 'a', 0o600));
  for (const p of [dbPath, `${dbPath}-wal`, `${dbPath}-shm`]) {
    try {
      if ((statSync(p).mode & 0o077) !== 0) chmodSync(p, 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

/**
 * Apply every migration newer than the database's `user_version`, each in its own transaction.
 * A database whose version is newer than every migration given is refused with STORE_FAILED.
 */
export function migrate(db: Db, migrations: readonly Migration[]): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  // A database a newer contextd migrated (a downgrade): its schema may lack what this build
  // writes (migration 10 dropped a column), so every write would fail one by one. Refused at once.
  const newest = migrations.reduce((n, m) => Math.max(n, m.version), 0);
  if (current > newest) {
    throw new ContextdError(ErrorCode.STORE_FAILED, `the state database has schema version ${current}, newer than this contextd knows (${newest}): run the contextd that wrote it, or give this one another state folder (--state)`, { schemaVersion: current, knownVersion: newest });
  }
  const pending = [...migrations].filter((m) => m.version > current).sort((a, b) => a.version - b.version);
  for (const m of pending) {
    // Immediate, and the version read again inside: another process (the daemon, a hook, the
    // CLI) opening the same file may have migrated it while this one waited for the lock.
    db.transaction(() => {
      if ((db.pragma('user_version', { simple: true }) as number) >= m.version) return;
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    }).immediate();
  }
}

/** Map a SQLite failure to a coded error; a full disk or database becomes STORE_FULL. */
export function wrapStoreError(err: unknown, what: string): ContextdError {
  if (err instanceof ContextdError) return err;
  const code = (err as { code?: unknown }).code;
  const full = code === 'SQLITE_FULL' || code === 'SQLITE_IOERR_WRITE' || code === 'SQLITE_IOERR';
  return new ContextdError(full ? ErrorCode.STORE_FULL : ErrorCode.STORE_FAILED, `${what}: ${describeError(err)}`, { sqliteCode: code }, { cause: err });
}

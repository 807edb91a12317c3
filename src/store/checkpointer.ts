import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Db } from './db.js';
import { sqliteAddon } from './db.js';

/**
 * WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside whichever
 * commit pushes the WAL past 1000 pages: that commit then copies the WAL into the database file
 * and fsyncs it, on the thread that committed — the daemon's event loop, for several ms (tens on
 * a busy disk) in the middle of a burst of plans. With a checkpointer the daemon's connection
 * never checkpoints (`wal_autocheckpoint = 0`); a worker thread with its own connection to the
 * same file runs a PASSIVE checkpoint (it never waits for, nor blocks, the writer) at most once
 * per `intervalMs`, and only when another connection committed since the last one
 * (`data_version`). The WAL is reset by the next commit after a complete checkpoint, so it stays
 * about one interval of writes long.
 *
 * Should the worker fail (it cannot open the file, a checkpoint throws, it exits), the
 * connection's automatic checkpoint is switched back on: the WAL never grows without bound.
 */
export interface Checkpointer {
  /** Checkpoints the worker has run (complete or partial). */
  readonly checkpoints: number;
  /** Whether the worker is running (false once closed or after a failure: automatic checkpoints again). */
  readonly running: boolean;
  /** Stop the worker and switch automatic checkpoints back on. Idempotent. */
  close(): Promise<void>;
}

export interface CheckpointerOptions {
  /** The database file `db` was opened on (the worker opens it too). */
  readonly path: string;
  /** Least time between two checkpoints (default CHECKPOINT_INTERVAL_MS). */
  readonly intervalMs?: number;
  /** The worker failed: automatic checkpoints are back on (the daemon logs it). */
  readonly onFailure?: (err: Error) => void;
}

/** Least time between two checkpoints by the worker, by default. */
export const CHECKPOINT_INTERVAL_MS = 1_000;
/** SQLite's own default `wal_autocheckpoint` (pages), restored when the worker stops or fails. */
export const AUTOCHECKPOINT_PAGES = 1_000;
/** How long `close` waits for the worker to finish its checkpoint before terminating it. */
const CLOSE_TIMEOUT_MS = 5_000;

/**
 * The worker's code, run with `eval` (a script beside this module would not be where a bundle or
 * the test runner looks): better-sqlite3 and its addon are handed over by path.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.path, { fileMustExist: true, nativeBinding: workerData.addon });
// Unknown at first: what was committed before the worker opened the file is checkpointed too.
let seen;
const timer = setInterval(() => {
  const version = db.pragma('data_version', { simple: true });
  if (version === seen) return;
  const r = db.pragma('wal_checkpoint(PASSIVE)')[0];
  // A partial checkpoint (a reader held frames back) is taken up again next time.
  seen = r.busy === 0 && r.checkpointed >= r.log ? version : undefined;
  parentPort.postMessage({ log: r.log, checkpointed: r.checkpointed });
}, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m !== 'close') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/** Start checkpointing `db` (a WAL-mode connection to `options.path`) on a worker thread. */
export function startCheckpointer(db: Db, options: CheckpointerOptions): Checkpointer {
  const intervalMs = options.intervalMs ?? CHECKPOINT_INTERVAL_MS;
  let checkpoints = 0;
  let running = true;
  let closing: Promise<void> | undefined;
  const restoreAuto = (): void => {
    if (db.open) db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
  };
  db.pragma('wal_autocheckpoint = 0');
  let worker: Worker;
  try {
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { module: createRequire(import.meta.url).resolve('better-sqlite3'), addon: sqliteAddon(), path: options.path, intervalMs },
      // It holds one connection and a timer: a small heap is plenty.
      resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
      stdout: false,
      stderr: false,
    });
  } catch (err) {
    restoreAuto();
    throw err;
  }
  // Never what keeps the process alive.
  worker.unref();
  const failed = (err: Error): void => {
    if (!running) return;
    running = false;
    restoreAuto();
    options.onFailure?.(err);
  };
  worker.on('message', () => checkpoints++);
  worker.on('error', (err) => failed(err));
  worker.on('exit', (code) => {
    if (closing === undefined) failed(new Error(`the checkpoint worker exited (code ${code})`));
  });
  return {
    get checkpoints() {
      return checkpoints;
    },
    get running() {
      return running;
    },
    close(): Promise<void> {
      closing ??= new Promise<void>((resolve) => {
        const wasRunning = running;
        running = false;
        restoreAuto();
        if (!wasRunning) {
          resolve();
          return;
        }
        // Awaited by shutdown before the final checkpoint: the worker's exit must keep the process up.
        worker.ref();
        const timer = setTimeout(() => void worker.terminate(), CLOSE_TIMEOUT_MS);
        worker.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        worker.postMessage('close');
      });
      return closing;
    },
  };
}

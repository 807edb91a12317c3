import { describeError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';

/** Pending rows are written once this many have gathered (else on the next turn of the loop). */
const FLUSH_AT = 2_000;

/**
 * Rows bound for a store cache, buffered and written in one call per turn of the event loop
 * (or once FLUSH_AT gathered), so a scan or a cold plan costs one transaction per batch, not
 * one per message, and no write happens on the append path. A failed write is logged with
 * `lostWhat` and forgotten: the caches it feeds are recomputable.
 */
export class WriteBehind<Row, Key = string> {
  private readonly pending = new Map<Key, Row>();
  private scheduled: NodeJS.Immediate | undefined;
  private closed = false;

  constructor(
    private readonly write: (rows: Row[]) => void,
    private readonly log: Logger,
    private readonly lostWhat: string,
  ) {}

  /** Rows waiting to be written. */
  get size(): number {
    return this.pending.size;
  }

  /** The row waiting under `key`, if any. */
  get(key: Key): Row | undefined {
    return this.pending.get(key);
  }

  /** Queue a row (after `close`, dropped). */
  add(key: Key, row: Row): void {
    if (this.closed) return;
    this.pending.set(key, row);
    if (this.pending.size >= FLUSH_AT) this.flush();
    else this.scheduled ??= setImmediate(() => this.flush());
  }

  /** Write what is pending now. */
  flush(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    if (this.pending.size === 0) return;
    const rows = [...this.pending.values()];
    this.pending.clear();
    try {
      this.write(rows);
    } catch (err) {
      this.log.warn({ err: describeError(err), rows: rows.length }, this.lostWhat);
    }
  }

  /** Flush and accept no more rows (before the database closes). */
  close(): void {
    this.flush();
    this.closed = true;
  }
}

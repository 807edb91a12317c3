import type { TranscriptEvent } from '../model/messages.js';

/** Events the tailer read from one transcript, not yet applied to the session's model. */
export interface QueuedBatch {
  readonly events: readonly TranscriptEvent[];
  /** File offset just past the batch's last line. */
  readonly toOffset: number | undefined;
  /** Transcript bytes the batch was decoded from (what backpressure counts). */
  readonly bytes: number;
}

/**
 * Transcript batches waiting for their session's turn, per session in arrival order, and the
 * bytes they hold in total. Readers ask `below(limit)` before reading more, so a burst (the first
 * scan of many large transcripts) waits for the models instead of piling up in memory.
 */
export class IngestQueue<K> {
  private readonly batches = new Map<K, QueuedBatch[]>();
  private held = 0;
  private waiters: { readonly limit: number; readonly resolve: () => void }[] = [];

  /** Bytes of all batches waiting. */
  get bytes(): number {
    return this.held;
  }

  /** Sessions with batches waiting. */
  get size(): number {
    return this.batches.size;
  }

  push(key: K, batch: QueuedBatch): void {
    const list = this.batches.get(key);
    if (list) list.push(batch);
    else this.batches.set(key, [batch]);
    this.held += batch.bytes;
  }

  /** Bytes of one session's batches waiting. */
  bytesOf(key: K): number {
    let n = 0;
    for (const b of this.batches.get(key) ?? []) n += b.bytes;
    return n;
  }

  has(key: K): boolean {
    return this.batches.has(key);
  }

  /** The oldest batch of a session, taken off the queue. */
  shift(key: K): QueuedBatch | undefined {
    const list = this.batches.get(key);
    const b = list?.shift();
    if (!b) return undefined;
    if (list?.length === 0) this.batches.delete(key);
    this.held -= b.bytes;
    this.wake();
    return b;
  }

  /** Discard a session's batches (its transcript was rewritten or removed). Returns how many. */
  drop(key: K): number {
    const list = this.batches.get(key);
    if (!list) return 0;
    this.batches.delete(key);
    for (const b of list) this.held -= b.bytes;
    this.wake();
    return list.length;
  }

  /**
   * Resolves once at most `limit` bytes wait; undefined when that is so already (the caller
   * need not await). `below(0)` waits until every batch was taken.
   */
  below(limit: number): Promise<void> | undefined {
    if (this.held <= limit) return undefined;
    return new Promise((resolve) => this.waiters.push({ limit, resolve }));
  }

  /** Release every waiter whatever the queue holds (shutdown). */
  releaseAll(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const x of w) x.resolve();
  }

  private wake(): void {
    if (this.waiters.length === 0) return;
    const still: typeof this.waiters = [];
    for (const w of this.waiters) {
      if (this.held <= w.limit) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }
}

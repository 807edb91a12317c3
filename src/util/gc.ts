/**
 * Giving freed memory back after sessions leave memory.
 *
 * V8 collects garbage when the program allocates, so a daemon that goes quiet after its
 * sessions were harvested and released keeps their heap (and its RSS) until the next busy
 * spell: measured with `bench load`, 50 released sessions still held ~580 MiB of dead heap 20 s
 * after the load, while a forced collection brought the live heap to 23 MiB. The daemon asks
 * for one full collection a little after it frees sessions, and not more often than
 * `minIntervalMs`. It also collects once at the end of the first scan (`collectNow`): measured with
 * `bench latency` on 100 transcripts of 271k tokens, the scan left ~130 MiB of dead read buffers
 * (RSS 566 MiB at the first status) that V8 let go only seconds later (420 MiB).
 *
 * A plain full collection frees the dead objects but keeps the heap's pages: measured with a
 * load of 50 sessions that were then harvested and forgotten, 20 MiB of live heap still sat in
 * 149 MiB of committed heap (RSS 331 MiB), because every page kept a few survivors. The
 * daemon's collections therefore compact (`compactingCollector`): survivors are moved together
 * and the emptied pages go back to the system.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** A full garbage collection, or undefined where the runtime refuses to expose one. */
export type Collect = () => void;

let exposed: Collect | null | undefined;

/**
 * The runtime's `gc()`: the global one when Node runs with `--expose-gc`, otherwise obtained
 * by switching the flag on and reading `gc` from a fresh context (the flag takes effect for
 * contexts created after it is set). Undefined when that fails.
 */
export function runtimeCollector(): Collect | undefined {
  if (exposed !== undefined) return exposed ?? undefined;
  const global = (globalThis as { gc?: unknown }).gc;
  if (typeof global === 'function') {
    exposed = global as Collect;
    return exposed;
  }
  try {
    setFlagsFromString('--expose-gc');
    const fn: unknown = runInNewContext('gc');
    exposed = typeof fn === 'function' ? (fn as Collect) : null;
  } catch {
    exposed = null;
  }
  return exposed ?? undefined;
}

/**
 * V8 flags switched on for the daemon's own collections only, and back to V8's defaults after:
 * - `compact-on-every-full-gc`: survivors are moved together, so pages holding only a few are
 *   emptied and returned to the system;
 * - `no-concurrent-sweeping`: the emptied pages are swept and unmapped before the collection
 *   returns, not by a background task some time later;
 * - `no-concurrent-array-buffer-sweeping`: the same for the backing stores of dead buffers (the
 *   scan's read buffers).
 *
 * Without the last two, the memory a collection frees left the process up to ~100 ms after it
 * returned, later on a busy machine: measured with `bench latency` (100 transcripts of 271k
 * tokens), RSS read as the restarted daemon reported ready was 212-328 MiB, 173 MiB once the
 * background tasks had run; whoever looked first saw the larger figure.
 */
export const SETTLED_COLLECTION_FLAGS: readonly string[] = Object.freeze(['compact-on-every-full-gc', 'no-concurrent-sweeping', 'no-concurrent-array-buffer-sweeping']);

/**
 * A full collection that also compacts the heap and has given the emptied pages and dead buffers
 * back to the system when it returns (`SETTLED_COLLECTION_FLAGS`, switched on for this
 * collection only: it costs more, and V8's own collections stay as they are).
 */
export function compactingCollector(collect: Collect | undefined = runtimeCollector()): Collect | undefined {
  if (!collect) return undefined;
  return () => {
    for (const flag of SETTLED_COLLECTION_FLAGS) setFlagsFromString(`--${flag}`);
    try {
      collect();
    } finally {
      for (const flag of SETTLED_COLLECTION_FLAGS) setFlagsFromString(flag.startsWith('no-') ? `--${flag.slice(3)}` : `--no-${flag}`);
    }
  };
}

/**
 * A minor collection (a scavenge of the young generation: cheap, a few ms). A busy spell such as
 * the first scan grows V8's young generation to its largest (two 16 MiB semi-spaces on 64-bit),
 * and V8 gives it back only at a collection that finds allocation slow over the last seconds
 * (measured: the young generation stays at 32 MiB after a full collection right after the spell,
 * and goes to 1 MiB at a minor one 6 s later). Undefined when there is no collection to call.
 */
export function youngCollector(collect: Collect | undefined = runtimeCollector()): Collect | undefined {
  if (!collect) return undefined;
  const gc = collect as (options?: { type: 'minor' | 'major' }) => void;
  return () => gc({ type: 'minor' });
}

export interface IdleCollectorOptions {
  /** Wait this long after the last request, so a burst of releases costs one collection (default 2 s). */
  readonly delayMs?: number;
  /** Least time between two collections (default 30 s). */
  readonly minIntervalMs?: number;
  /** The collection to run (default the runtime's, compacting; nothing happens when there is none). */
  readonly collect?: Collect | undefined;
  /**
   * Asked when a requested collection is due: false skips it (the next request schedules one
   * again). A compacting collection costs time and memory in proportion to what is live (measured
   * with `bench load`: one run while 42 sessions still held 12.6 M tokens stalled the daemon
   * 4.3 s and took RSS from 654 to 919 MiB), so the daemon runs it once little is left.
   */
  readonly worthIt?: () => boolean;
  /**
   * Run this long after each collection (default 10 s): `collectYoung`, which shrinks the young
   * generation once allocation has been slow for a few seconds (a busy daemon keeps it).
   */
  readonly youngDelayMs?: number;
  /** The minor collection to run then (default the runtime's; nothing happens when there is none). */
  readonly collectYoung?: Collect | undefined;
  readonly now?: () => number;
}

/** Runs one full collection after memory was freed: debounced, and at most once per interval. */
export class IdleCollector {
  private readonly delayMs: number;
  private readonly minIntervalMs: number;
  private readonly collect: Collect | undefined;
  private readonly now: () => number;
  private readonly worthIt: () => boolean;
  private readonly youngDelayMs: number;
  private readonly collectYoung: Collect | undefined;
  private timer: NodeJS.Timeout | undefined;
  private youngTimer: NodeJS.Timeout | undefined;
  private lastAt = Number.NEGATIVE_INFINITY;
  /** Collections run so far. */
  runs = 0;

  constructor(options: IdleCollectorOptions = {}) {
    this.delayMs = options.delayMs ?? 2_000;
    this.minIntervalMs = options.minIntervalMs ?? 30_000;
    this.collect = 'collect' in options ? options.collect : compactingCollector();
    this.now = options.now ?? Date.now;
    this.worthIt = options.worthIt ?? (() => true);
    this.youngDelayMs = options.youngDelayMs ?? 10_000;
    this.collectYoung = 'collectYoung' in options ? options.collectYoung : youngCollector();
  }

  /** Memory was freed: collect once things have been quiet for `delayMs`. */
  request(): void {
    if (!this.collect) return;
    if (this.timer) clearTimeout(this.timer);
    const wait = Math.max(this.delayMs, this.lastAt + this.minIntervalMs - this.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.worthIt()) this.run();
    }, wait);
    this.timer.unref();
  }

  /**
   * Collect now (a pending request is folded into it): after a burst of allocation that is over
   * for good, such as the first scan of every transcript, whose read buffers are dead the moment
   * it ends. Returns whether a collection ran.
   */
  collectNow(): boolean {
    if (!this.collect) return false;
    if (this.timer) clearTimeout(this.timer);
    this.run();
    return true;
  }

  /** Drop a pending collection (shutdown). */
  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.youngTimer) clearTimeout(this.youngTimer);
    this.timer = undefined;
    this.youngTimer = undefined;
  }

  private run(): void {
    this.timer = undefined;
    this.lastAt = this.now();
    this.runs++;
    this.collect?.();
    if (!this.collectYoung) return;
    if (this.youngTimer) clearTimeout(this.youngTimer);
    this.youngTimer = setTimeout(() => {
      this.youngTimer = undefined;
      this.collectYoung?.();
    }, this.youngDelayMs);
    this.youngTimer.unref();
  }
}

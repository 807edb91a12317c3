/**
 * The order in which sessions get planned. Planning is CPU work on the event loop, so plans
 * run one at a time, and the loop is given back (setImmediate) between two of them: socket
 * requests such as daemon.status and transcript events are served while a hundred sessions
 * wait for their plans, instead of after all of them.
 *
 * Fairness: sessions are served first come, first served, and a session is queued at most once
 * — a session whose transcript grows while it waits is planned once, from its latest state,
 * and a session that changes again after its plan goes to the back of the queue. So one busy
 * session can delay another's plan by at most one plan of its own.
 */
export type PlanJob = () => Promise<void>;

export interface PlanQueueOptions {
  /** Plans running at once (default 1: the work is synchronous CPU between summarizer awaits). */
  readonly concurrency?: number;
  /** Called when a job throws (jobs are expected to handle their own errors). */
  readonly onError?: (key: string, err: unknown) => void;
}

export class PlanQueue {
  private readonly waiting = new Map<string, PlanJob>();
  private readonly running = new Map<string, Promise<void>>();
  private readonly concurrency: number;
  private readonly onError: (key: string, err: unknown) => void;
  private pump: NodeJS.Immediate | undefined;
  private idleWaiters: (() => void)[] = [];

  constructor(options: PlanQueueOptions = {}) {
    this.concurrency = Math.max(1, options.concurrency ?? 1);
    this.onError = options.onError ?? (() => undefined);
  }

  /**
   * Ask for a plan of `key`. A key already waiting keeps its place (and its first job: the
   * job reads the session's state when it runs); a key being planned now waits behind every
   * other key queued before it.
   */
  enqueue(key: string, job: PlanJob): void {
    if (this.waiting.has(key)) return;
    this.waiting.set(key, job);
    this.schedule();
  }

  /** Drop a waiting job (the session went away). A running one finishes. */
  cancel(key: string): void {
    this.waiting.delete(key);
    this.settleIfIdle();
  }

  isQueued(key: string): boolean {
    return this.waiting.has(key);
  }

  /** Keys waiting, in the order they will run. */
  queued(): string[] {
    return [...this.waiting.keys()];
  }

  /** Resolves once nothing is waiting or running. */
  idle(): Promise<void> {
    if (this.waiting.size === 0 && this.running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private schedule(): void {
    this.pump ??= setImmediate(() => {
      this.pump = undefined;
      this.startNext();
    });
  }

  /** Start the oldest waiting job whose key is not running; one per turn of the loop. */
  private startNext(): void {
    if (this.running.size >= this.concurrency) return;
    for (const [key, job] of this.waiting) {
      if (this.running.has(key)) continue;
      this.waiting.delete(key);
      const run = Promise.resolve()
        .then(job)
        .catch((err: unknown) => this.onError(key, err))
        .finally(() => {
          this.running.delete(key);
          if (this.waiting.size > 0) this.schedule();
          else this.settleIfIdle();
        });
      this.running.set(key, run);
      break;
    }
    // More may start (concurrency > 1): on the next turn, after pending I/O.
    if (this.running.size < this.concurrency && [...this.waiting.keys()].some((k) => !this.running.has(k))) this.schedule();
  }

  private settleIfIdle(): void {
    if (this.waiting.size > 0 || this.running.size > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}

import { setImmediate as nextIteration } from 'node:timers/promises';

/**
 * Resolves in a later event-loop iteration, after the loop polled for I/O: the yield a worker's
 * `pause` makes, and the one home for it in the daemon (the idle harvest round yields with it
 * between sessions).
 */
export function yieldToEventLoop(): Promise<void> {
  return nextIteration();
}

/**
 * The time slice of each event-loop iteration, shared by everyone who works in steps (the run
 * queue's pump, every plan in flight, a request catching a session up). Each is a `worker`: after
 * a pause (a yield to the event loop) it may go on for its share of the slice — `sliceMs` over the
 * workers active at that moment — and then pauses again. So between two polls for I/O the loop
 * runs about one slice plus one step per worker, however many work at once, and a busy pump
 * leaves plans the same share as itself. A worker resumed from a pause always runs its next step,
 * so none is starved.
 */
export class LoopBudget {
  private active = 0;

  /** `sliceMs` is read at each resume (it follows a reconfigure); 0 means one step per iteration. */
  constructor(private readonly sliceMs: () => number) {}

  /** Workers active now (created and not done). */
  get workers(): number {
    return this.active;
  }

  /** A new worker; call `done()` when it ends, or it keeps a share. It may start at once. */
  worker(): BudgetWorker {
    this.active++;
    let open = true;
    return new BudgetWorker(
      () => this.sliceMs() / Math.max(1, this.active),
      () => {
        if (open) this.active--;
        open = false;
      },
    );
  }
}

/** One worker of a LoopBudget. */
export class BudgetWorker {
  private until: number;

  constructor(
    private readonly share: () => number,
    /** The worker ended: its share goes to the others. Idempotent. */
    readonly done: () => void,
  ) {
    this.until = performance.now() + share();
  }

  /** True while this worker's share of the iteration lasts. */
  left(): boolean {
    return performance.now() < this.until;
  }

  /** Resolves in a later iteration, after the loop polled for I/O, with a fresh share. */
  async pause(): Promise<void> {
    await yieldToEventLoop();
    this.until = performance.now() + this.share();
  }

  /**
   * A `pause` hook for the planner (PlanOptions.pause): undefined (go on) while the share lasts,
   * else a pause. The first call always pauses, so a plan never runs inside the turn that
   * started it.
   */
  hook(): () => Promise<void> | undefined {
    let first = true;
    return () => {
      if (!first && this.left()) return undefined;
      first = false;
      return this.pause();
    };
  }
}

import { setImmediate as yieldToEventLoop } from 'node:timers/promises';

/**
 * One time budget per event-loop iteration, shared by everyone who works in slices (the run
 * queue's pump, every plan in flight, a request catching a session up). Each asks `left()`
 * between steps and yields (`pause`) when the iteration's budget is spent, so between two polls
 * for I/O the loop runs about one budget plus one step per worker, however many work at once.
 *
 * The budget starts with the first `left()` of an iteration; a `setImmediate` queued then ends
 * it, and runs ahead of the workers that yield later (immediates run in the order queued).
 * Progress is never starved: a worker resumed from `pause` always runs its next step.
 */
export class LoopBudget {
  private start: number | undefined;

  /** `sliceMs` is read at each check (it follows a reconfigure); 0 means one step per iteration. */
  constructor(private readonly sliceMs: () => number) {}

  /** True while this iteration's budget lasts (the first call of an iteration starts it). */
  left(): boolean {
    const now = performance.now();
    if (this.start === undefined) {
      this.start = now;
      setImmediate(() => {
        this.start = undefined;
      });
    }
    return now - this.start < this.sliceMs();
  }

  /** Resolves in a later iteration, after the loop polled for I/O. */
  pause(): Promise<void> {
    return yieldToEventLoop();
  }

  /**
   * A `pause` hook for one worker (the planner's PlanOptions.pause): undefined (go on) while the
   * budget lasts, else a yield. The first call always yields, so a worker never runs inside the
   * slice of the one that started it.
   */
  hook(): () => Promise<void> | undefined {
    let first = true;
    return () => {
      if (first) {
        first = false;
        return this.pause();
      }
      return this.left() ? undefined : this.pause();
    };
  }
}

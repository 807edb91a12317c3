/**
 * The tailer's descriptor budget: at most `max` transcript descriptors exist at once, whether a
 * read is using one or it is kept open between reads.
 *
 * Measured (audit, 600 one-line transcripts at `ulimit -n 256`): bounding only the descriptors
 * kept between reads is no bound at all while a scan or a burst opens every file at once — 374
 * opens failed with EMFILE and the tokenizer's lazy load failed with them. So a file takes a slot
 * before it opens and gives it back only once its descriptor is closed; a file that finds none
 * free asks the owner to close an idle one (`reclaim`) and waits, first come first served.
 *
 * No I/O here: the owner decides which descriptor is idle and closes it.
 */

/** Waits for and hands out a fixed number of descriptor slots. */
export class DescriptorSlots {
  readonly max: number;
  private used = 0;
  /** Idle descriptors being closed for waiters (each gives its slot back when closed). */
  private reclaiming = 0;
  private readonly waiting: ((granted: boolean) => void)[] = [];
  private closed = false;

  /**
   * `reclaim` is asked, when a slot is wanted and none is free, to close one idle descriptor (its
   * slot comes back through `release` once the close is done). It returns false when every
   * holder is busy: the waiter then gets the next slot given back.
   */
  constructor(max: number, private readonly reclaim: () => boolean) {
    this.max = Math.max(1, max);
  }

  /** Slots taken (descriptors open or being opened). */
  get inUse(): number {
    return this.used;
  }

  /** Files waiting for a slot. */
  get waiters(): number {
    return this.waiting.length;
  }

  /**
   * Take a slot: true at once when one is free, otherwise a promise of true once one is given
   * back, or of false once the slots are closed (the caller must not open anything then).
   */
  acquire(): true | Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if (this.used < this.max) {
      this.used++;
      return true;
    }
    const granted = new Promise<boolean>((resolve) => this.waiting.push(resolve));
    this.serveWaiters();
    return granted;
  }

  /** Give a slot back (its descriptor is closed, or was never opened): the first waiter gets it. */
  release(): void {
    if (this.reclaiming > 0) this.reclaiming--;
    const next = this.closed ? undefined : this.waiting.shift();
    if (next) next(true);
    else this.used = Math.max(0, this.used - 1);
  }

  /**
   * Reclaim one idle descriptor per waiter not yet served by a close under way, so no waiter
   * waits for a descriptor nothing uses. Called when a slot is wanted and when a read ends.
   */
  serveWaiters(): void {
    while (!this.closed && this.waiting.length > this.reclaiming && this.reclaim()) this.reclaiming++;
  }

  /** No more slots: every waiter is told false (the tailer is closing). */
  close(): void {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w(false);
  }
}

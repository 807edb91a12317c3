/**
 * The gate the tailer's reads of one session wait at (`SessionManager.room`): whether a
 * session's reads are held, and the readers waiting for them to go on.
 *
 * A reader held at the gate is woken when what held it clears (`wake`), and looks again after
 * `recheckMs` even when nothing woke it (a safety net: a missed wake-up delays lines, never loses
 * them). The gate holds no other state: the session manager says what holds a session.
 */

/** A reader held at the gate looks again after this long even when nothing woke it. */
export const READ_RECHECK_MS = 1_000;

/** What decides whether a session's reads are held (see `holdsReads`). */
export interface ReadFacts {
  /** The first scan is over (before it, nothing is held). */
  readonly steady: boolean;
  /** The manager stops ingesting (shutdown): nothing is held. */
  readonly closing: boolean;
  /** The session is still the one registered under its id. */
  readonly current: boolean;
  /** Fed over the socket: its transcript is not read into the model. */
  readonly fed: boolean;
  /** Lines read for it wait to be applied. */
  readonly queued: boolean;
  /** Its model is being rebuilt after a release. */
  readonly restoring: boolean;
  /** A plan of it is due (queued) or being made. */
  readonly planDue: boolean;
  /** Its model is released from memory. */
  readonly released: boolean;
  /** Its model's headroom (≤ 0: over its budget). */
  readonly headroom: () => number;
}

/**
 * Whether a session's reads wait: after the first scan, while its lines read before wait to be
 * applied or its model is being rebuilt, and while its model is over its budget with a plan due or
 * being made (an overdue plan holds reads: the model stays near its budget while plans are behind).
 */
export function holdsReads(f: ReadFacts): boolean {
  if (!f.steady || f.closing || !f.current || f.fed) return false;
  if (f.queued || f.restoring) return true;
  return f.planDue && !f.released && f.headroom() <= 0;
}

/** Readers held at the gate, per session, until woken or `recheckMs` passed. */
export class ReadGate<K> {
  private readonly waiters = new Map<K, Set<() => void>>();

  constructor(private readonly recheckMs = READ_RECHECK_MS) {}

  /** Resolves when `key`'s reads may go on (`wake`), or after `recheckMs` to look again. */
  wait(key: K): Promise<void> {
    return new Promise((resolve) => {
      let list = this.waiters.get(key);
      if (!list) this.waiters.set(key, (list = new Set()));
      const waiting = list;
      const wake = (): void => {
        clearTimeout(timer);
        waiting.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, this.recheckMs);
      waiting.add(wake);
    });
  }

  /** What held `key`'s reads may have cleared: its readers look again. */
  wake(key: K): void {
    const list = this.waiters.get(key);
    if (!list) return;
    this.waiters.delete(key);
    for (const wake of list) wake();
  }

  /** Every reader looks again (shutdown). */
  wakeAll(): void {
    for (const key of [...this.waiters.keys()]) this.wake(key);
  }
}

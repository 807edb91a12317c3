/**
 * Finished-session detection by inactivity. Pure: the caller passes times in.
 *
 * A session is finished when the agent says so (`session.end`, handled by the daemon, which
 * calls `end()` here), or when it has been idle for `idleMs` (default 30 min), or — sooner —
 * when its format's own end-of-turn marker was the last thing seen (Claude end_turn, Codex
 * task_complete, hermes finish_reason stop) and it then stayed idle for `turnEndIdleMs`
 * (default 10 min). Any new activity after a turn end re-arms the full timeout.
 */
export interface IdleTrackerOptions {
  readonly idleMs?: number;
  readonly turnEndIdleMs?: number;
}

interface Entry {
  lastActivity: number;
  turnEnded: boolean;
}

export const DEFAULT_IDLE_MS = 30 * 60 * 1000;
export const DEFAULT_TURN_END_IDLE_MS = 10 * 60 * 1000;

export class IdleTracker {
  readonly idleMs: number;
  readonly turnEndIdleMs: number;
  private readonly sessions = new Map<string, Entry>();

  constructor(options: IdleTrackerOptions = {}) {
    this.idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
    this.turnEndIdleMs = Math.min(options.turnEndIdleMs ?? DEFAULT_TURN_END_IDLE_MS, this.idleMs);
  }

  /** Activity on a session at `at` (epoch ms): a new line, a subscription, a request. */
  touch(sessionId: string, at: number): void {
    const e = this.sessions.get(sessionId);
    if (e) {
      if (at >= e.lastActivity) {
        e.lastActivity = at;
        e.turnEnded = false;
      }
    } else this.sessions.set(sessionId, { lastActivity: at, turnEnded: false });
  }

  /** The session's format reported the end of a turn at `at`. */
  turnEnded(sessionId: string, at: number): void {
    this.touch(sessionId, at);
    const e = this.sessions.get(sessionId);
    if (e && e.lastActivity === at) e.turnEnded = true;
  }

  /** Forget a session (it ended explicitly, or was harvested). */
  end(sessionId: string): boolean {
    return this.sessions.delete(sessionId);
  }

  /** Tracked sessions. */
  get size(): number {
    return this.sessions.size;
  }

  /**
   * Sessions finished by `now`, oldest activity first. They are forgotten here: a later
   * `touch` tracks them again (a resumed session), and harvest re-reads only grown sessions.
   */
  due(now: number): string[] {
    const out: { id: string; at: number }[] = [];
    for (const [id, e] of this.sessions) {
      const idle = now - e.lastActivity;
      if (idle >= this.idleMs || (e.turnEnded && idle >= this.turnEndIdleMs)) out.push({ id, at: e.lastActivity });
    }
    out.sort((a, b) => a.at - b.at || a.id.localeCompare(b.id));
    for (const o of out) this.sessions.delete(o.id);
    return out.map((o) => o.id);
  }

  /** When the next session becomes due (epoch ms), for scheduling a timer; undefined if none. */
  nextDueAt(): number | undefined {
    let next: number | undefined;
    for (const e of this.sessions.values()) {
      const at = e.lastActivity + (e.turnEnded ? this.turnEndIdleMs : this.idleMs);
      if (next === undefined || at < next) next = at;
    }
    return next;
  }
}

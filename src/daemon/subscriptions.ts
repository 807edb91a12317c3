/**
 * Which connection subscribed to which session, indexed both ways: a plan or headroom push and
 * the "anyone subscribed?" question the session manager asks on every append look up a
 * session's connections directly, instead of scanning every connection's set (with a hundred
 * agents connected that scan ran several times per append).
 */
export class Subscriptions {
  private readonly byConnection = new Map<string, Set<string>>();
  private readonly bySession = new Map<string, Set<string>>();

  add(connId: string, sessionId: string): void {
    addTo(this.byConnection, connId, sessionId);
    addTo(this.bySession, sessionId, connId);
  }

  /** The connection closed: it follows nothing any more. */
  dropConnection(connId: string): void {
    const sessions = this.byConnection.get(connId);
    if (!sessions) return;
    this.byConnection.delete(connId);
    for (const sessionId of sessions) {
      const conns = this.bySession.get(sessionId);
      conns?.delete(connId);
      if (conns?.size === 0) this.bySession.delete(sessionId);
    }
  }

  has(connId: string, sessionId: string): boolean {
    return this.byConnection.get(connId)?.has(sessionId) ?? false;
  }

  /** Sessions a connection subscribed to. */
  sessionsOf(connId: string): string[] {
    return [...(this.byConnection.get(connId) ?? [])];
  }

  /** Connections subscribed to a session (a live view: copy before changing subscriptions while iterating). */
  connectionsOf(sessionId: string): ReadonlySet<string> {
    return this.bySession.get(sessionId) ?? EMPTY;
  }

  /** Whether a connection follows any session. */
  follows(connId: string): boolean {
    return (this.byConnection.get(connId)?.size ?? 0) > 0;
  }
}

const EMPTY: ReadonlySet<string> = new Set();

function addTo(map: Map<string, Set<string>>, key: string, value: string): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(value);
}

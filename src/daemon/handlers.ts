import { defineHandler, METHODS, PARAMS_SCHEMAS, type Handler } from '../ipc/index.js';
import { ContextdError, ErrorCode } from '../util/errors.js';
import type { Archive } from '../store/index.js';
import type { SessionManager } from './sessions.js';
import type { WarmService } from './warm-service.js';
import type { LiveSession } from './live-session.js';
import type { DaemonStatus } from './daemon.js';

/** What the socket handlers may ask of the daemon. */
export interface DaemonApi {
  sessions(): SessionManager;
  warm(): WarmService;
  archive(): Archive;
  /** Subscribe a connection to a session; the current plan (or a fresh one) follows at once. */
  subscribe(connectionId: string, session: LiveSession): void;
  /** Harvest a finished session (tracked: shutdown waits for it). */
  harvest(session: LiveSession, outcome: 'success' | 'failure' | 'unknown', connectionId: string): Promise<{ harvested: number }>;
  /** Sessions a connection subscribed to. */
  subscribedSessions(connectionId: string): readonly string[];
  status(): DaemonStatus;
  /**
   * Whether the socket is shared with a group (`socketGroup`): then a connection sees only the
   * sessions it subscribed to (by transcript path, or by an id it already sees).
   */
  readonly isolated: boolean;
}

/**
 * The JSON-RPC method table of design §6, each validated by its params schema. `initialize`
 * is answered by the IPC dispatcher itself (server name, version, protocol version).
 */
export function buildHandlers(api: DaemonApi): Record<string, Handler> {
  /** The session, if this connection may see it; else the same error as for an unknown one. */
  const assertVisible = (sessionId: string, connectionId: string): void => {
    if (api.isolated && !api.subscribedSessions(connectionId).includes(sessionId)) {
      throw new ContextdError(ErrorCode.UNKNOWN_SESSION, `unknown session "${sessionId}": on a shared socket, subscribe to it by transcriptPath first`, { sessionId });
    }
  };
  const visible = (sessionId: string, connectionId: string) => {
    assertVisible(sessionId, connectionId);
    return api.sessions().require(sessionId);
  };
  return {
    [METHODS.subscribe]: defineHandler(PARAMS_SCHEMAS[METHODS.subscribe], (p, ctx) => {
      const sessions = api.sessions();
      let session;
      if (p.sessionId !== undefined) session = visible(p.sessionId, ctx.connectionId);
      else if (p.transcriptPath !== undefined) {
        session = sessions.byTranscript(p.transcriptPath);
        if (!session) {
          throw new ContextdError(ErrorCode.UNKNOWN_SESSION, `no live session reads "${p.transcriptPath}": is it under a watched directory, and has a line been written yet?`, { transcriptPath: p.transcriptPath });
        }
      } else {
        if (api.isolated) throw new ContextdError(ErrorCode.UNKNOWN_SESSION, 'on a shared socket (socketGroup), name the session by transcriptPath', {});
        session = sessions.all().sort((a, b) => b.lastActivityAt - a.lastActivityAt)[0];
        if (!session) throw new ContextdError(ErrorCode.UNKNOWN_SESSION, 'no live session yet: subscribe again once the agent has written its transcript', {});
      }
      api.subscribe(ctx.connectionId, session);
      // Templates this connection bootstrapped belong to the session it works in.
      for (const id of api.warm().bootstrappedBy(ctx.connectionId)) session.bootstrappedTemplates.add(id);
      return { sessionId: session.sessionId, headroom: session.model.headroom() };
    }),

    [METHODS.headroom]: defineHandler(PARAMS_SCHEMAS[METHODS.headroom], (p, ctx) => {
      const s = visible(p.sessionId, ctx.connectionId);
      const h = s.model.headroom();
      return { ...h };
    }),

    [METHODS.sections]: defineHandler(PARAMS_SCHEMAS[METHODS.sections], (p, ctx) => visible(p.sessionId, ctx.connectionId).model.sections()),

    [METHODS.compact]: defineHandler(PARAMS_SCHEMAS[METHODS.compact], (p, ctx) => {
      visible(p.sessionId, ctx.connectionId);
      return api.sessions().compactNow(p.sessionId, p.targetHeadroom, p.dryRun ?? false);
    }),

    [METHODS.ack]: defineHandler(PARAMS_SCHEMAS[METHODS.ack], (p, ctx) => {
      const owner = api.sessions().sessionOfPlan(p.planId);
      if (owner) visible(owner.sessionId, ctx.connectionId);
      const { headroom } = api.sessions().acknowledge(p.planId, p.applied, p.editIds, p.reason);
      return { ok: true, headroom };
    }),

    [METHODS.recall]: defineHandler(PARAMS_SCHEMAS[METHODS.recall], (p, ctx) => {
      assertVisible(p.sessionId, ctx.connectionId);
      const entry = api.archive().get(p.handle);
      if (!entry || entry.sessionId !== p.sessionId) {
        throw new ContextdError(ErrorCode.UNKNOWN_HANDLE, `no archived originals under "${p.handle}" for session "${p.sessionId}": handles are quoted in summaries as [contextd recall h_…]`, { handle: p.handle });
      }
      return { handle: entry.handle, sessionId: entry.sessionId, reason: entry.reason, sectionIds: entry.sectionIds, messages: entry.messages, tokens: entry.tokens, redactions: entry.redactions ?? [] };
    }),

    [METHODS.endSession]: defineHandler(PARAMS_SCHEMAS[METHODS.endSession], async (p, ctx) => {
      const s = visible(p.sessionId, ctx.connectionId);
      api.sessions().endSession(s);
      const r = await api.harvest(s, p.outcome, ctx.connectionId);
      return { harvested: r.harvested };
    }),

    [METHODS.bootstrap]: defineHandler(PARAMS_SCHEMAS[METHODS.bootstrap], (p, ctx) => {
      const result = api.warm().bootstrap({ task: p.task, budgetTokens: p.budgetTokens, ...(p.repo !== undefined ? { repo: p.repo } : {}) }, ctx.connectionId);
      for (const sessionId of api.subscribedSessions(ctx.connectionId)) {
        const s = api.sessions().get(sessionId);
        for (const id of result.templateIds) s?.bootstrappedTemplates.add(id);
      }
      return result;
    }),

    [METHODS.status]: defineHandler(PARAMS_SCHEMAS[METHODS.status], (_p, ctx) => {
      const status = api.status();
      if (!api.isolated) return status;
      const mine = new Set(api.subscribedSessions(ctx.connectionId));
      return { ...status, sessions: status.sessions.filter((s) => mine.has(s.sessionId)), watch: [] };
    }),
  };
}

import { defineHandler, METHODS, PARAMS_SCHEMAS, RpcError, RpcErrorCode, type Handler } from '../ipc/index.js';
import { ContextdError, ErrorCode } from '../util/errors.js';
import { normalizeOpenAIMessages } from '../ingest/index.js';
import { zoneOf } from './lifecycle.js';
import type { DaemonApi } from './api.js';

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
    [METHODS.subscribe]: defineHandler(PARAMS_SCHEMAS[METHODS.subscribe], async (p, ctx) => {
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
      await sessions.restore(session);
      api.subscribe(ctx.connectionId, session);
      // Templates this connection bootstrapped belong to the session it works in.
      for (const id of api.warm().bootstrappedBy(ctx.connectionId)) session.bootstrappedTemplates.add(id);
      return { sessionId: session.sessionId, headroom: session.model.headroom() };
    }),

    [METHODS.headroom]: defineHandler(PARAMS_SCHEMAS[METHODS.headroom], async (p, ctx) => {
      const s = await api.sessions().restore(visible(p.sessionId, ctx.connectionId));
      const h = s.model.headroom();
      return { ...h, linkedSession: s.linkedSession ?? null };
    }),

    [METHODS.sections]: defineHandler(PARAMS_SCHEMAS[METHODS.sections], async (p, ctx) => (await api.sessions().restore(visible(p.sessionId, ctx.connectionId))).model.sections()),

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
      // A fed session released from memory holds no messages to harvest: its agent syncs them first.
      api.sessions().assertFedInMemory(s);
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

    [METHODS.sync]: defineHandler(PARAMS_SCHEMAS[METHODS.sync], (p, ctx) => {
      let messages;
      try {
        messages = normalizeOpenAIMessages(p.messages);
      } catch (err) {
        if (err instanceof RangeError) throw new RpcError(RpcErrorCode.INVALID_PARAMS, `invalid params for session.sync: ${err.message}`);
        throw err;
      }
      const sessions = api.sessions();
      // On a shared socket, an existing session is fed only by a connection that already sees it.
      if (sessions.get(p.sessionId)) assertVisible(p.sessionId, ctx.connectionId);
      const { session, rebuilt } = sessions.feed(p.sessionId, messages, p.budgetTokens);
      api.subscribe(ctx.connectionId, session);
      for (const id of api.warm().bootstrappedBy(ctx.connectionId)) session.bootstrappedTemplates.add(id);
      const headroom = session.model.headroom();
      const watermarks = sessions.watermarks();
      return { sessionId: session.sessionId, headroom, zone: zoneOf(headroom, watermarks), watermarks, rebuilt, messages: messages.length };
    }),

    [METHODS.status]: defineHandler(PARAMS_SCHEMAS[METHODS.status], (_p, ctx) => {
      const status = api.status();
      if (!api.isolated) return status;
      const mine = new Set(api.subscribedSessions(ctx.connectionId));
      return { ...status, sessions: status.sessions.filter((s) => mine.has(s.sessionId)), watch: [] };
    }),


    [METHODS.search]: defineHandler(PARAMS_SCHEMAS[METHODS.search], (p, ctx) => {
      if (p.sessionId !== undefined) assertVisible(p.sessionId, ctx.connectionId);
      const hits = api.archive().search(p.query, { sessionId: p.sessionId, limit: p.limit });
      if (!api.isolated) return { hits };
      const mine = new Set(api.subscribedSessions(ctx.connectionId));
      return { hits: hits.filter((h) => mine.has(h.sessionId)) };
    }),
  };
}

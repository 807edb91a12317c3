import { defineHandler, METHODS, PARAMS_SCHEMAS, RpcError, RpcErrorCode, type Handler } from '../ipc/index.js';
import { ContextdError, ErrorCode } from '../util/errors.js';
import { normalizeOpenAIMessages } from '../ingest/index.js';
import { zoneOf } from './live-session.js';
import type { DaemonApi } from './api.js';

/**
 * The JSON-RPC method table of design §6, each validated by its params schema. `initialize`
 * is answered by the IPC dispatcher itself (server name, version, protocol version).
 */
export function buildHandlers(api: DaemonApi): Record<string, Handler> {
  return {
    [METHODS.subscribe]: defineHandler(PARAMS_SCHEMAS[METHODS.subscribe], (p, ctx) => {
      const sessions = api.sessions();
      let session;
      if (p.sessionId !== undefined) session = sessions.require(p.sessionId);
      else if (p.transcriptPath !== undefined) {
        session = sessions.byTranscript(p.transcriptPath);
        if (!session) {
          throw new ContextdError(ErrorCode.UNKNOWN_SESSION, `no live session reads "${p.transcriptPath}": is it under a watched directory, and has a line been written yet?`, { transcriptPath: p.transcriptPath });
        }
      } else {
        session = sessions.all().sort((a, b) => b.lastActivityAt - a.lastActivityAt)[0];
        if (!session) throw new ContextdError(ErrorCode.UNKNOWN_SESSION, 'no live session yet: subscribe again once the agent has written its transcript', {});
      }
      api.subscribe(ctx.connectionId, session.sessionId);
      // Templates this connection bootstrapped belong to the session it works in.
      for (const id of api.warm().bootstrappedBy(ctx.connectionId)) session.bootstrappedTemplates.add(id);
      return { sessionId: session.sessionId, headroom: session.model.headroom() };
    }),

    [METHODS.headroom]: defineHandler(PARAMS_SCHEMAS[METHODS.headroom], (p) => {
      const s = api.sessions().require(p.sessionId);
      const h = s.model.headroom();
      return { ...h };
    }),

    [METHODS.sections]: defineHandler(PARAMS_SCHEMAS[METHODS.sections], (p) => api.sessions().require(p.sessionId).model.sections()),

    [METHODS.compact]: defineHandler(PARAMS_SCHEMAS[METHODS.compact], (p) =>
      api.sessions().compactNow(p.sessionId, p.targetHeadroom, p.dryRun ?? false),
    ),

    [METHODS.ack]: defineHandler(PARAMS_SCHEMAS[METHODS.ack], (p) => {
      const { headroom } = api.sessions().acknowledge(p.planId, p.applied, p.editIds, p.reason);
      return { ok: true, headroom };
    }),

    [METHODS.recall]: defineHandler(PARAMS_SCHEMAS[METHODS.recall], (p) => {
      const entry = api.archive().get(p.handle);
      if (!entry || entry.sessionId !== p.sessionId) {
        throw new ContextdError(ErrorCode.UNKNOWN_HANDLE, `no archived originals under "${p.handle}" for session "${p.sessionId}": handles are quoted in summaries as [contextd recall h_…]`, { handle: p.handle });
      }
      return { handle: entry.handle, sessionId: entry.sessionId, reason: entry.reason, sectionIds: entry.sectionIds, messages: entry.messages, tokens: entry.tokens };
    }),

    [METHODS.endSession]: defineHandler(PARAMS_SCHEMAS[METHODS.endSession], async (p, ctx) => {
      const s = api.sessions().require(p.sessionId);
      const r = await api.warm().harvest(s, p.outcome, ctx.connectionId);
      s.ended = true;
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
      const { session, rebuilt } = sessions.feed(p.sessionId, messages, p.budgetTokens);
      api.subscribe(ctx.connectionId, session.sessionId);
      for (const id of api.warm().bootstrappedBy(ctx.connectionId)) session.bootstrappedTemplates.add(id);
      const headroom = session.model.headroom();
      const watermarks = sessions.watermarks();
      return { sessionId: session.sessionId, headroom, zone: zoneOf(headroom, watermarks), watermarks, rebuilt, messages: messages.length };
    }),

    [METHODS.status]: defineHandler(PARAMS_SCHEMAS[METHODS.status], () => api.status()),

    [METHODS.search]: defineHandler(PARAMS_SCHEMAS[METHODS.search], (p) => ({
      hits: api.archive().search(p.query, { sessionId: p.sessionId, limit: p.limit }),
    })),
  };
}

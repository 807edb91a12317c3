/**
 * Wire errors. `RpcError` carries a JSON-RPC numeric code and a message a person can act on;
 * local `ContextdError`s are mapped here before anything crosses the socket. Stack traces and
 * the local string codes never reach a peer.
 */
import { ContextdError, ErrorCode } from '../util/errors.js';
import type { JsonRpcErrorObject } from './protocol.js';

/** JSON-RPC 2.0 codes plus contextd's own (-32001…-32099, the implementation-defined range). */
export const RpcErrorCode = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  /** No such session: subscribe to one listed by `daemon.status`. */
  UNKNOWN_SESSION: -32001,
  /** The plan was superseded or timed out; ask again with `session.compact`. */
  PLAN_EXPIRED: -32002,
  /** No archived originals under that handle. */
  UNKNOWN_HANDLE: -32003,
  /** A line longer than the server's `maxLineBytes`. The connection stays usable. */
  REQUEST_TOO_LARGE: -32004,
  /**
   * Reserved: only returned when the server runs with `requireInitialize: true`. By default
   * `initialize` is optional (but recommended: it announces the client and checks the version).
   */
  NOT_INITIALIZED: -32005,
  /** The daemon cannot serve this now (store full or failing, shutting down, summarizer down). */
  UNAVAILABLE: -32006,
  /** The requested target headroom cannot be reached (everything left is anchored). */
  BUDGET_UNREACHABLE: -32007,
  /** The server already serves `maxClients` connections; this one is closed after the error. */
  TOO_MANY_CLIENTS: -32008,
  /** The connection was idle, or left a line unfinished, for too long; it is closed after the error. */
  CONNECTION_TIMEOUT: -32009,
  /**
   * `session.sync` of a session not in memory while `memory.maxFedSessions` sessions fed over the
   * socket are, each synced lately by a connected client (or busy with a plan): nothing changed,
   * retry later. `data.limit` is the bound.
   */
  TOO_MANY_SESSIONS: -32010,
} as const;
export type RpcErrorCode = (typeof RpcErrorCode)[keyof typeof RpcErrorCode];

/** An error that crosses the socket as a JSON-RPC error object. */
export class RpcError extends Error {
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'RpcError';
    this.code = code;
    this.data = data;
  }

  /** The JSON-RPC `error` member (no stack). */
  toJSON(): JsonRpcErrorObject {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }

  /** Rebuild from a wire error object (client side). */
  static fromJSON(obj: JsonRpcErrorObject): RpcError {
    return new RpcError(obj.code, obj.message, obj.data);
  }
}

/** True when `err` is an RpcError, optionally with the given code. */
export function isRpcError(err: unknown, code?: number): err is RpcError {
  return err instanceof RpcError && (code === undefined || err.code === code);
}

// ---------------------------------------------------------------------------------------------
// Canonical errors with actionable messages, for handlers to throw.

/** `unknown session "abc": subscribe to a session listed by daemon.status`. */
export function unknownSession(sessionId: string): RpcError {
  return new RpcError(
    RpcErrorCode.UNKNOWN_SESSION,
    `unknown session ${JSON.stringify(sessionId)}: subscribe to a session listed by daemon.status`,
    { sessionId },
  );
}

/** The plan cannot be acked any more. */
export function planExpired(planId: string): RpcError {
  return new RpcError(
    RpcErrorCode.PLAN_EXPIRED,
    `plan ${JSON.stringify(planId)} has expired or was superseded: call session.compact for a fresh plan`,
    { planId },
  );
}

/** No archive entry under `handle`. */
export function unknownHandle(handle: string): RpcError {
  return new RpcError(
    RpcErrorCode.UNKNOWN_HANDLE,
    `unknown handle ${JSON.stringify(handle)}: use the handle quoted in a summary of this session`,
    { handle },
  );
}

/** Unknown method, listing the ones that exist. */
export function methodNotFound(method: string, known: readonly string[]): RpcError {
  return new RpcError(
    RpcErrorCode.METHOD_NOT_FOUND,
    `unknown method ${JSON.stringify(method)}; available: ${known.join(', ')}`,
    { method },
  );
}

// ---------------------------------------------------------------------------------------------
// Mapping of local errors

/** Wire code for each local error code. Codes not listed map to INTERNAL_ERROR. */
export const CONTEXTD_TO_RPC: Readonly<Partial<Record<ErrorCode, RpcErrorCode>>> = {
  [ErrorCode.UNKNOWN_SESSION]: RpcErrorCode.UNKNOWN_SESSION,
  [ErrorCode.PLAN_EXPIRED]: RpcErrorCode.PLAN_EXPIRED,
  [ErrorCode.UNKNOWN_HANDLE]: RpcErrorCode.UNKNOWN_HANDLE,
  [ErrorCode.LINE_TOO_LONG]: RpcErrorCode.REQUEST_TOO_LARGE,
  [ErrorCode.STORE_FULL]: RpcErrorCode.UNAVAILABLE,
  [ErrorCode.STORE_FAILED]: RpcErrorCode.UNAVAILABLE,
  // The session's model is being rebuilt from its transcript: try again.
  [ErrorCode.INGEST_FAILED]: RpcErrorCode.UNAVAILABLE,
  [ErrorCode.STATE_LOCKED]: RpcErrorCode.UNAVAILABLE,
  [ErrorCode.SUMMARIZER_FAILED]: RpcErrorCode.UNAVAILABLE,
  [ErrorCode.LIFECYCLE]: RpcErrorCode.UNAVAILABLE,
  [ErrorCode.DAEMON_UNREACHABLE]: RpcErrorCode.UNAVAILABLE,
  // The transcript was replaced before its harvest read it back: the tailer resets the session.
  [ErrorCode.FILE_REPLACED]: RpcErrorCode.UNAVAILABLE,
  [ErrorCode.BUDGET_UNREACHABLE]: RpcErrorCode.BUDGET_UNREACHABLE,
  [ErrorCode.TOO_MANY_FED_SESSIONS]: RpcErrorCode.TOO_MANY_SESSIONS,
  // Released from memory: the agent's next session.sync rebuilds it, then the request can be made again.
  [ErrorCode.FED_SESSION_RELEASED]: RpcErrorCode.UNAVAILABLE,
  // A transcriptPath the daemon cannot follow is a bad parameter of the request.
  [ErrorCode.TAIL_FILE_GONE]: RpcErrorCode.INVALID_PARAMS,
  [ErrorCode.FORMAT_UNKNOWN]: RpcErrorCode.INVALID_PARAMS,
  [ErrorCode.NOTHING_READ]: RpcErrorCode.INVALID_PARAMS,
  [ErrorCode.USAGE]: RpcErrorCode.INVALID_PARAMS,
};

/** Only primitive detail values cross the socket (no nested objects, no causes). */
function safeDetails(details: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> | undefined {
  if (!details) return undefined;
  const out: Record<string, unknown> = {};
  let any = false;
  for (const [k, v] of Object.entries(details)) {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
      out[k] = v;
      any = true;
    }
  }
  return any ? out : undefined;
}

/**
 * Turn anything a handler threw into an RpcError safe to send. RpcErrors pass through;
 * ContextdErrors keep their message (written for people) and primitive details; anything
 * else becomes INTERNAL_ERROR with a reference to the daemon log, never its message or stack.
 */
export function toRpcError(err: unknown, ref?: string): RpcError {
  if (err instanceof RpcError) return err;
  if (err instanceof ContextdError) {
    const code = CONTEXTD_TO_RPC[err.code];
    if (code === undefined) return internalError(ref);
    const details = safeDetails(err.details);
    if (code === RpcErrorCode.UNKNOWN_SESSION && typeof details?.['sessionId'] === 'string') {
      return unknownSession(details['sessionId']);
    }
    if (code === RpcErrorCode.PLAN_EXPIRED && typeof details?.['planId'] === 'string') {
      return planExpired(details['planId']);
    }
    if (code === RpcErrorCode.UNKNOWN_HANDLE && typeof details?.['handle'] === 'string') {
      return unknownHandle(details['handle']);
    }
    return new RpcError(code, err.message, details);
  }
  return internalError(ref);
}

function internalError(ref: string | undefined): RpcError {
  const where = ref ? ` (ref ${ref})` : '';
  return new RpcError(RpcErrorCode.INTERNAL_ERROR, `internal error in contextd${where}: see the daemon log`);
}


/**
 * Errors the proxy itself answers, shaped as each provider sends them, so an agent handles
 * them exactly as it would handle the provider's own (retry on 5xx, give up on 413…).
 */
import type { ServerResponse } from 'node:http';

export type Provider = 'anthropic' | 'openai';

export const PROXY_ERRORS = {
  /** Request body over proxy.maxBodyBytes. */
  tooLarge: { status: 413, anthropic: 'request_too_large', openai: 'invalid_request_error' },
  /** The agent's request body stalled (proxy.bodyIdleTimeoutMs); its connection is closed. */
  requestTimeout: { status: 408, anthropic: 'invalid_request_error', openai: 'invalid_request_error' },
  /** The upstream did not answer in time. */
  timeout: { status: 504, anthropic: 'timeout_error', openai: 'timeout' },
  /** The upstream could not be reached or dropped the connection before answering. */
  unreachable: { status: 502, anthropic: 'api_error', openai: 'server_error' },
  /** The proxy is shutting down, or holds too many request bodies at once (proxy.maxBufferedBytes). */
  unavailable: { status: 503, anthropic: 'overloaded_error', openai: 'server_error' },
} as const;
export type ProxyErrorKind = keyof typeof PROXY_ERRORS;

/** Errors after which the agent's connection is not reused (the rest of its request is not read). */
const CLOSES: ReadonlySet<ProxyErrorKind> = new Set(['tooLarge', 'requestTimeout', 'unavailable']);

/** The JSON body a provider sends for an error of this kind. */
export function errorBody(provider: Provider, kind: ProxyErrorKind, message: string): string {
  const e = PROXY_ERRORS[kind];
  if (provider === 'anthropic') return JSON.stringify({ type: 'error', error: { type: e.anthropic, message } });
  return JSON.stringify({ error: { message, type: e.openai, param: null, code: e.openai } });
}

/** Answer a request with a provider-shaped error (when no response header was sent yet). */
export function sendError(res: ServerResponse, provider: Provider, kind: ProxyErrorKind, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = errorBody(provider, kind, message);
  res.writeHead(PROXY_ERRORS[kind].status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...(CLOSES.has(kind) ? { connection: 'close' } : {}) });
  res.end(body);
}

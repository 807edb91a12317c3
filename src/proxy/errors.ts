/**
 * Errors the proxy itself answers, shaped as each provider sends them, so an agent handles
 * them exactly as it would handle the provider's own (retry on 408 and 5xx, honour
 * `Retry-After`, give up on 413…). One home for every answer the proxy makes up: failed
 * upstreams, refused requests and refused connections.
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export type Provider = 'anthropic' | 'openai';

export const PROXY_ERRORS = {
  /** Request body over proxy.maxBodyBytes. */
  tooLarge: { status: 413, anthropic: 'request_too_large', openai: 'invalid_request_error' },
  /** The agent's request stalled (proxy.bodyIdleTimeoutMs) or took too long (proxy.requestTimeoutMs); its connection is closed. */
  requestTimeout: { status: 408, anthropic: 'invalid_request_error', openai: 'invalid_request_error' },
  /** The agent sent something that is not HTTP; its connection is closed. */
  badRequest: { status: 400, anthropic: 'invalid_request_error', openai: 'invalid_request_error' },
  /** The agent's request headers are larger than Node's header limit; its connection is closed. */
  headersTooLarge: { status: 431, anthropic: 'invalid_request_error', openai: 'invalid_request_error' },
  /** The upstream did not answer in time. */
  timeout: { status: 504, anthropic: 'timeout_error', openai: 'timeout' },
  /** The upstream could not be reached or dropped the connection before answering. */
  unreachable: { status: 502, anthropic: 'api_error', openai: 'server_error' },
  /** The proxy is shutting down, or is over proxy.maxConnections or proxy.maxBufferedBytes. */
  unavailable: { status: 503, anthropic: 'overloaded_error', openai: 'server_error' },
} as const;
export type ProxyErrorKind = keyof typeof PROXY_ERRORS;

/** Seconds an agent is told to wait (`Retry-After`) before retrying, for the kinds that say so. */
export const RETRY_AFTER_S: Readonly<Partial<Record<ProxyErrorKind, number>>> = Object.freeze({ unavailable: 2 });

/**
 * How long a refused agent may go on sending (its bytes read and discarded, never held) after
 * its answer, before its connection is closed. Closing with bytes unread makes TCP reset the
 * connection, and a reset can destroy the answer before the agent reads it.
 */
export const REFUSAL_LINGER_MS = 2_000;

/** Errors after which the agent's connection is not reused (the rest of its request is not read). */
const CLOSES: ReadonlySet<ProxyErrorKind> = new Set(['tooLarge', 'requestTimeout', 'badRequest', 'headersTooLarge', 'unavailable']);

/**
 * The JSON body a provider sends for an error of this kind. With no provider (nothing of the
 * request has been read yet), a body both shapes read: Anthropic's `type` / `error.type` /
 * `error.message` and OpenAI's `error.message` / `error.code`.
 */
export function errorBody(provider: Provider | undefined, kind: ProxyErrorKind, message: string): string {
  const e = PROXY_ERRORS[kind];
  if (provider === 'anthropic') return JSON.stringify({ type: 'error', error: { type: e.anthropic, message } });
  if (provider === 'openai') return JSON.stringify({ error: { message, type: e.openai, param: null, code: e.openai } });
  return JSON.stringify({ type: 'error', error: { type: e.anthropic, message, param: null, code: e.openai } });
}

interface ErrorResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | number>>;
  readonly body: string;
}

function errorResponse(provider: Provider | undefined, kind: ProxyErrorKind, message: string): ErrorResponse {
  const body = errorBody(provider, kind, message);
  const retryAfter = RETRY_AFTER_S[kind];
  return {
    status: PROXY_ERRORS[kind].status,
    headers: {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      ...(retryAfter === undefined ? {} : { 'retry-after': retryAfter }),
      ...(CLOSES.has(kind) ? { connection: 'close' } : {}),
    },
    body,
  };
}

/** Answer a request with a provider-shaped error (when no response header was sent yet). */
export function sendError(res: ServerResponse, provider: Provider, kind: ProxyErrorKind, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const r = errorResponse(provider, kind, message);
  res.writeHead(r.status, r.headers);
  res.end(r.body);
}

/**
 * Refuse a request whose body is not (all) read: the error is sent whole at once, the rest of
 * the body is read and discarded until it ends or `lingerMs` passes, and then the connection
 * closes (the response says `connection: close`). `lingerMs` 0 closes at once (for an agent
 * that has been silent, so that nothing is left unread).
 */
export function refuseRequest(req: IncomingMessage, res: ServerResponse, provider: Provider, kind: ProxyErrorKind, message: string, lingerMs: number): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const r = errorResponse(provider, kind, message);
  res.writeHead(r.status, r.headers);
  res.write(r.body); // the whole answer (content-length says so); end() below closes the connection
  req.resume(); // whatever else arrives is discarded, not buffered
  if (lingerMs <= 0 || req.complete) {
    res.end();
    return;
  }
  const done = (): void => {
    clearTimeout(timer);
    if (!res.writableEnded) res.end();
  };
  const timer = setTimeout(done, lingerMs);
  timer.unref();
  req.once('end', done);
  res.once('close', () => clearTimeout(timer));
}

/**
 * Refuse a connection that has no request to answer (it was refused on accept, or its request
 * could not be parsed): the error is written as a whole HTTP/1.1 response and the socket ended;
 * what the agent still sends is read and discarded until it closes its side or `lingerMs`
 * passes. An HTTP client reads the response as the answer to the request it sent.
 */
export function refuseConnection(socket: Socket, provider: Provider | undefined, kind: ProxyErrorKind, message: string, lingerMs: number): void {
  const r = errorResponse(provider, kind, message);
  const head = [`HTTP/1.1 ${r.status} ${STATUS_CODES[r.status] ?? 'Error'}`, ...Object.entries(r.headers).map(([k, v]) => `${k}: ${v}`)].join('\r\n');
  socket.on('error', () => undefined); // a reset after the answer is not news
  socket.on('data', () => undefined); // flowing, discarded: nothing the refused agent sends is kept
  socket.end(`${head}\r\n\r\n${r.body}`);
  if (lingerMs <= 0) {
    socket.destroySoon();
    return;
  }
  const timer = setTimeout(() => socket.destroy(), lingerMs);
  timer.unref();
  socket.once('end', () => socket.destroy());
  socket.once('close', () => clearTimeout(timer));
}

/**
 * Forwarding one request to the provider and its answer back, byte for byte: status,
 * headers and body chunks are passed on as they arrive (SSE streams stay streams). Problems
 * become what a provider would send: before any response header a provider-shaped 502/504;
 * after, the connection to the agent is cut, as a provider reset would cut it.
 */
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse, type OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { sendError, type Provider } from './errors.js';

/** Hop-by-hop headers (RFC 9110 §7.6.1) and those recomputed for the new body. */
const NOT_FORWARDED = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length']);

export interface ForwardOptions {
  readonly provider: Provider;
  /** Upstream base URL (origin, optionally with a path prefix). */
  readonly upstream: URL;
  /** Path and query of the agent's request. */
  readonly path: string;
  readonly method: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  /** Limit for the response headers to arrive. */
  readonly upstreamTimeoutMs: number;
  /** Limit for silence between response chunks. */
  readonly streamIdleTimeoutMs: number;
}

export interface ForwardResult {
  readonly status: number | undefined;
  /** How the exchange ended: 'ok', or what went wrong. */
  readonly outcome: 'ok' | 'timeout' | 'unreachable' | 'upstream-reset' | 'stream-idle' | 'client-gone';
  readonly bytes: number;
  /** ms from sending upstream to the first response byte passed to the agent. */
  readonly firstByteMs: number | undefined;
}

/** Request headers for the upstream: the agent's own (credentials included), minus hop-by-hop. */
export function upstreamHeaders(headers: IncomingHttpHeaders, host: string, length: number): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !NOT_FORWARDED.has(k)) out[k] = v;
  out['host'] = host;
  out['content-length'] = length;
  return out;
}

function responseHeaders(up: IncomingMessage): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(up.headers)) {
    // the body passes unchanged, so its length does too
    if (v !== undefined && (k === 'content-length' || !NOT_FORWARDED.has(k))) out[k] = v;
  }
  return out;
}

/** The upstream URL of an agent's path: the base's path prefix + the agent's path. */
export function upstreamUrl(base: URL, path: string): URL {
  const prefix = base.pathname.replace(/\/+$/, '');
  return new URL(`${base.origin}${prefix}${path.startsWith('/') ? path : `/${path}`}`);
}

/**
 * Idle time after which a free kept-alive upstream connection is closed by the proxy: below the
 * 5 s idle timeout common at providers and load balancers, so a connection the upstream is about
 * to close is rarely handed to a new request (a reset on it could not be told apart from one
 * after the upstream received the request, and is then answered 502, not sent again).
 */
export const UPSTREAM_FREE_SOCKET_TIMEOUT_MS = 4_000;

// Node's agents destroy a free socket when its `timeout` runs out; sockets in use are left alone.
const httpAgent = new HttpAgent({ keepAlive: true, timeout: UPSTREAM_FREE_SOCKET_TIMEOUT_MS });
const httpsAgent = new HttpsAgent({ keepAlive: true, timeout: UPSTREAM_FREE_SOCKET_TIMEOUT_MS });

/** Forward and stream the answer into `res`. Never rejects; never leaves `res` open. */
export function forward(o: ForwardOptions, res: ServerResponse): Promise<ForwardResult> {
  return new Promise((resolve) => {
    const url = upstreamUrl(o.upstream, o.path);
    const started = performance.now();
    let firstByteMs: number | undefined;
    let bytes = 0;
    let status: number | undefined;
    let settled = false;
    const done = (outcome: ForwardResult['outcome']): void => {
      if (settled) return;
      settled = true;
      resolve({ status, outcome, bytes, firstByteMs });
    };
    const send = (): ClientRequest =>
      url.protocol === 'https:'
        ? httpsRequest(url, { method: o.method, headers: upstreamHeaders(o.headers, url.host, o.body.length), agent: httpsAgent })
        : httpRequest(url, { method: o.method, headers: upstreamHeaders(o.headers, url.host, o.body.length), agent: httpAgent });
    let upReq = send();
    let mayResend = resendGuard(upReq);
    let retries = 0;
    const headersTimer = setTimeout(() => {
      upReq.destroy();
      sendError(res, o.provider, 'timeout', `contextd proxy: upstream ${url.host} sent no response within ${o.upstreamTimeoutMs} ms`);
      done('timeout');
    }, o.upstreamTimeoutMs);
    // The agent hung up: stop the upstream work too.
    res.on('close', () => {
      clearTimeout(headersTimer);
      if (!res.writableFinished) {
        upReq.destroy();
        done('client-gone');
      }
    });
    const onError = (err: NodeJS.ErrnoException): void => {
      if (settled) return;
      // A kept-alive connection the upstream had closed before it could handle any of this
      // request: sent again on a new connection rather than answered with a 502. Anything the
      // upstream may have received (a paid completion) is never sent twice.
      if (mayResend(err) && retries < MAX_STALE_RETRIES && !res.headersSent) {
        retries++;
        upReq = send();
        mayResend = resendGuard(upReq);
        wire();
        return;
      }
      clearTimeout(headersTimer);
      if (res.headersSent) {
        res.destroy();
        done('upstream-reset');
        return;
      }
      sendError(res, o.provider, 'unreachable', `contextd proxy: upstream ${url.host} failed: ${err.code ?? err.message}`);
      done('unreachable');
    };
    const onResponse = (up: IncomingMessage): void => {
      clearTimeout(headersTimer);
      status = up.statusCode;
      res.writeHead(up.statusCode ?? 502, up.statusMessage, responseHeaders(up));
      res.flushHeaders();
      up.setTimeout(o.streamIdleTimeoutMs, () => {
        up.destroy();
        res.destroy();
        done('stream-idle');
      });
      up.on('data', (chunk: Buffer) => {
        if (firstByteMs === undefined) firstByteMs = performance.now() - started;
        bytes += chunk.length;
        if (!res.write(chunk)) {
          up.pause();
          res.once('drain', () => up.resume());
        }
      });
      up.on('end', () => {
        res.end();
        done('ok');
      });
      // A reset mid-stream: cut the agent's connection too (it sees what the provider did).
      up.on('error', () => undefined);
      up.on('close', () => {
        if (up.complete) return;
        res.destroy();
        done('upstream-reset');
      });
    };
    const wire = (): void => {
      upReq.on('error', onError);
      upReq.on('response', onResponse);
      upReq.end(o.body);
    };
    wire();
  });
}

/** Sends of one request again when each went out on a kept-alive connection the upstream had closed. */
const MAX_STALE_RETRIES = 2;

/**
 * The one rule for sending a failed upstream request again (the proxy's and the test relay's).
 * Call it right after creating `req`; the predicate it returns says, for `req`'s error, whether
 * the upstream cannot have handled any of the request: it went out on a reused kept-alive
 * connection, was reset (ECONNRESET/EPIPE), and either the request was not yet fully written
 * (no 'finish': an incomplete request is never processed) or the connection had already been
 * closed by the upstream when it was handed to `req`. A reset after the whole request went out
 * on a live connection may come after the upstream received it (a dropped long completion, a
 * crash): never sent again, since it would be received, and billed, twice.
 */
export function resendGuard(req: ClientRequest): (err: NodeJS.ErrnoException) => boolean {
  let finished = false;
  let peerClosedFirst = false;
  req.once('finish', () => {
    finished = true;
  });
  req.once('socket', (socket: Socket) => {
    peerClosedFirst = socket.readableEnded || socket.destroyed;
  });
  return (err) => req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE') && (!finished || peerClosedFirst);
}

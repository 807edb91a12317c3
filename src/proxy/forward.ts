/**
 * Forwarding one request to the provider and its answer back, byte for byte: status,
 * headers and body chunks are passed on as they arrive (SSE streams stay streams). Problems
 * become what a provider would send: before any response header a provider-shaped 502/504;
 * after, the connection to the agent is cut, as a provider reset would cut it.
 */
import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
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
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    let upReq = send(url, { method: o.method, headers: upstreamHeaders(o.headers, url.host, o.body.length) });
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
      // A kept-alive connection the upstream closed as this request went out on it (its idle
      // timeout ran out meanwhile): reset before any answer, so sent again on a new connection
      // rather than answered with a 502 the agent would retry anyway.
      if (isStaleConnection(upReq, err) && retries < MAX_STALE_RETRIES && !res.headersSent) {
        retries++;
        upReq = send(url, { method: o.method, headers: upstreamHeaders(o.headers, url.host, o.body.length) });
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

/** Sends of one request again when each went out on a kept-alive connection the upstream had just closed. */
const MAX_STALE_RETRIES = 2;

/** Whether `err` is a reused keep-alive connection reset before any answer (Node's documented retry case). */
function isStaleConnection(req: ClientRequest, err: NodeJS.ErrnoException): boolean {
  return req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE');
}

/**
 * Proxy options: the `proxy` section of the config file (validated with the rest of it) and
 * the one frozen object the server runs with.
 */
import { z } from 'zod';
import { ContextdError, ErrorCode } from '../util/errors.js';

export const DEFAULT_UPSTREAMS = Object.freeze({ anthropic: 'https://api.anthropic.com', openai: 'https://api.openai.com' });

export const PROXY_DEFAULTS = Object.freeze({
  host: '127.0.0.1',
  maxBodyBytes: 32 * 1024 * 1024,
  upstreamTimeoutMs: 600_000,
  streamIdleTimeoutMs: 300_000,
  maxConversations: 256,
  recallTool: false,
  /** Receiving a whole request (headers and body) may take this long; the response is not bound by it. */
  requestTimeoutMs: 300_000,
  /** Longest silence while a request's body is still arriving. */
  bodyIdleTimeoutMs: 30_000,
  /** Agent connections served at once (kept-alive idle ones included). */
  maxConnections: 128,
});

/** Request body bytes held at once over every connection, unless configured: room for eight bodies of the largest size. */
export const DEFAULT_BUFFERED_BODIES = 8;

/**
 * An upstream is an origin and maybe a path prefix. Credentials (`user:pass@`) and a query
 * string are refused rather than dropped or sent on: the agent's own authentication headers go
 * upstream (a Basic header made from the URL would clash with its `authorization`), and the
 * agent's query is what is forwarded. Refusing them also keeps them out of every log line.
 */
const httpUrl = z
  .string()
  .url()
  .refine((u) => /^https?:\/\//.test(u), 'must be an http:// or https:// URL')
  .refine((u) => !URL.canParse(u) || (new URL(u).username === '' && new URL(u).password === ''), 'must not carry credentials (user:password@host): the proxy forwards the agent\'s own authentication headers; give the key to the agent')
  .refine((u) => !URL.canParse(u) || (new URL(u).search === '' && new URL(u).hash === ''), 'must not have a query string or fragment (an API key there would be dropped, and the agent\'s query is what is forwarded): give an origin and optionally a path prefix');

/** An upstream URL as it may be logged or shown: no credentials, no query string or fragment. */
export function displayUrl(u: string): string {
  if (!URL.canParse(u)) return '(invalid URL)';
  const url = new URL(u);
  return `${url.origin}${url.pathname}`;
}

/** `proxy` in the config file; every field optional. */
export const proxyConfigSchema = z
  .object({
    /** `HOST:PORT` or `PORT` (host defaults to 127.0.0.1). */
    listen: z.string().min(1).optional(),
    upstreams: z.object({ anthropic: httpUrl.optional(), openai: httpUrl.optional() }).strict().optional(),
    maxBodyBytes: z.number().int().min(1024).optional(),
    upstreamTimeoutMs: z.number().int().positive().optional(),
    streamIdleTimeoutMs: z.number().int().positive().optional(),
    maxConversations: z.number().int().positive().optional(),
    /** Offer the model the `contextd_recall` tool, answered by the proxy (changes the prompt once). */
    recallTool: z.boolean().optional(),
    requestTimeoutMs: z.number().int().min(100).optional(),
    bodyIdleTimeoutMs: z.number().int().min(100).optional(),
    maxConnections: z.number().int().positive().optional(),
    /** At least `maxBodyBytes` (checked when the options are resolved). */
    maxBufferedBytes: z.number().int().min(1024).optional(),
  })
  .strict();
export type ProxyConfig = z.infer<typeof proxyConfigSchema>;

/** Everything the proxy server runs with. */
export interface ProxyOptions {
  readonly host: string;
  readonly port: number;
  readonly upstreams: { readonly anthropic: string; readonly openai: string };
  readonly maxBodyBytes: number;
  readonly upstreamTimeoutMs: number;
  readonly streamIdleTimeoutMs: number;
  readonly maxConversations: number;
  /** Offer and answer the `contextd_recall` tool (off by default: adding a tool changes the prompt). */
  readonly recallTool: boolean;
  /** Receiving one request (headers and body) is answered 408 and cut after this; a long streamed response is not. */
  readonly requestTimeoutMs: number;
  /** A request whose body stays silent this long is answered 408 and its connection closed. */
  readonly bodyIdleTimeoutMs: number;
  /** Connections past this are answered 503 (with `Retry-After`) as soon as they are accepted, and closed. */
  readonly maxConnections: number;
  /** Request body bytes held at once over all connections; a body that would pass it is answered 503. */
  readonly maxBufferedBytes: number;
  /** Conversations idle this long are forgotten (the archive keeps their originals). */
  readonly idleTimeoutMs: number;
  readonly budgetTokens: number | undefined;
  readonly reserveRatio: number;
  readonly hysteresis: number;
}

/** `HOST:PORT`, `[v6]:PORT` or `PORT` → host and port; a clear error otherwise. */
export function parseListen(listen: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(listen) ?? /^()()(\d+)$/.exec(listen);
  const port = Number(m?.[3]);
  if (!m || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ContextdError(ErrorCode.CONFIG_INVALID, `options: field "proxy.listen": "${listen}" is not HOST:PORT or PORT`, { listen });
  }
  return { host: m[1] || m[2] || PROXY_DEFAULTS.host, port };
}

/** True for addresses only this machine can reach. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

/** Resolve the proxy options, or undefined when no `listen` is configured (proxy off). */
export function resolveProxyOptions(
  config: ProxyConfig | undefined,
  loop: { readonly idleTimeoutMs: number; readonly budgetTokens: number | undefined; readonly reserveRatio: number; readonly hysteresis: number },
): ProxyOptions | undefined {
  if (!config?.listen) return undefined;
  const { host, port } = parseListen(config.listen);
  const maxBodyBytes = config.maxBodyBytes ?? PROXY_DEFAULTS.maxBodyBytes;
  const maxBufferedBytes = config.maxBufferedBytes ?? DEFAULT_BUFFERED_BODIES * maxBodyBytes;
  if (maxBufferedBytes < maxBodyBytes) {
    throw new ContextdError(ErrorCode.CONFIG_INVALID, `options: field "proxy.maxBufferedBytes": ${maxBufferedBytes} is below proxy.maxBodyBytes (${maxBodyBytes}): no body of the largest allowed size could ever be received`, { maxBufferedBytes, maxBodyBytes });
  }
  return Object.freeze({
    host,
    port,
    upstreams: Object.freeze({ anthropic: config.upstreams?.anthropic ?? DEFAULT_UPSTREAMS.anthropic, openai: config.upstreams?.openai ?? DEFAULT_UPSTREAMS.openai }),
    maxBodyBytes,
    upstreamTimeoutMs: config.upstreamTimeoutMs ?? PROXY_DEFAULTS.upstreamTimeoutMs,
    streamIdleTimeoutMs: config.streamIdleTimeoutMs ?? PROXY_DEFAULTS.streamIdleTimeoutMs,
    maxConversations: config.maxConversations ?? PROXY_DEFAULTS.maxConversations,
    recallTool: config.recallTool ?? PROXY_DEFAULTS.recallTool,
    requestTimeoutMs: config.requestTimeoutMs ?? PROXY_DEFAULTS.requestTimeoutMs,
    bodyIdleTimeoutMs: config.bodyIdleTimeoutMs ?? PROXY_DEFAULTS.bodyIdleTimeoutMs,
    maxConnections: config.maxConnections ?? PROXY_DEFAULTS.maxConnections,
    maxBufferedBytes,
    idleTimeoutMs: loop.idleTimeoutMs,
    budgetTokens: loop.budgetTokens,
    reserveRatio: loop.reserveRatio,
    hysteresis: loop.hysteresis,
  });
}

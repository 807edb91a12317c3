/**
 * The contextd proxy: an HTTP server between an agent and its model provider. Requests of
 * the Anthropic Messages, OpenAI Chat Completions and OpenAI Responses APIs are modelled per
 * conversation and, past the reserve, forwarded with the plan applied; everything else
 * (and anything that cannot be parsed) is forwarded untouched. Authentication headers go to
 * the upstream and nowhere else: they are never logged or stored.
 */
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Plan, Summarizer } from '../compact/index.js';
import type { TokenCounter } from '../model/tokens.js';
import { ContextdError, ErrorCode, describeError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { RateLimitedLog } from '../util/log-limit.js';
import { Conversation, type Prepared } from './conversation.js';
import { PROXY_ERRORS, REFUSAL_LINGER_MS, refuseConnection, refuseRequest, sendError, type ProxyErrorKind, type Provider } from './errors.js';
import { forward, type ForwardResult } from './forward.js';
import { anthropicFormat } from './formats/anthropic.js';
import { openaiChatFormat } from './formats/openai-chat.js';
import { openaiResponsesFormat } from './formats/openai-responses.js';
import { sessionHint, shortHash } from './match.js';
import { displayUrl, type ProxyOptions } from './options.js';
import { isObject, type JsonObject, type ProviderFormat } from './request.js';
import type { ArchiveSink, OriginalsFilter } from './types.js';
import { RECALL_TOOL_NAME, fitTokens, withRecall } from './recall.js';
import { archivedText } from '../store/index.js';

/** A handle as summaries quote it. */
const RECALL_HANDLE_RE = /^h_[0-9a-f]{16}$/;
/** The least a recall answer may hold, however small the window. */
const RECALL_MIN_TOKENS = 256;
/** Refused connections answered at once, at least (else `maxConnections`): a burst of retries is answered, not reset. */
const MIN_REFUSING = 32;

export interface ProxyDeps {
  readonly logger: Logger;
  readonly tokenCounter: TokenCounter;
  readonly summarizer: Summarizer;
  readonly archive?: ArchiveSink;
  /** Redacts originals before they are archived. */
  readonly archiveFilter?: OriginalsFilter;
  readonly now?: () => number;
}

export interface ProxyEvents {
  /** A conversation was seen for the first time. */
  opened: [conversation: Conversation];
  /** A request of the conversation was modelled (and maybe compacted) and forwarded. */
  request: [conversation: Conversation, prepared: Prepared];
  /** A plan asked for over the socket (`compact`) was applied; the next request carries it. */
  compacted: [conversation: Conversation, plan: Plan];
  /** A conversation was idle past its timeout (or evicted) and is forgotten. */
  closed: [conversation: Conversation, why: string];
}

export type ProxyState = 'new' | 'listening' | 'closing' | 'closed';

/** Totals over every conversation, for status and the benchmark. */
export interface ProxyTotals {
  requests: number;
  modelled: number;
  passthrough: number;
  plansApplied: number;
  cacheBreaks: number;
  tokensIn: number;
  tokensOut: number;
  upstreamErrors: number;
}

interface Route {
  readonly provider: Provider;
  readonly format: ProviderFormat | undefined;
}

/** A request target without its query: what the proxy routes by and logs (a query may carry a key). */
function pathOf(target: string): string {
  return target.split('?')[0] ?? '';
}

/** Which provider and format a path speaks. */
export function routeOf(path: string, headers: IncomingMessage['headers']): Route {
  const p = pathOf(path).replace(/\/+$/, '');
  if (p.endsWith('/messages/count_tokens')) return { provider: 'anthropic', format: undefined };
  if (p.endsWith('/messages')) return { provider: 'anthropic', format: anthropicFormat };
  if (p.endsWith('/chat/completions')) return { provider: 'openai', format: openaiChatFormat };
  if (p.endsWith('/responses')) return { provider: 'openai', format: openaiResponsesFormat };
  const anthropic = headers['anthropic-version'] !== undefined || headers['x-api-key'] !== undefined;
  return { provider: anthropic ? 'anthropic' : 'openai', format: undefined };
}

class BodyTooLarge extends Error {}
/** The body stayed silent longer than `bodyIdleTimeoutMs`. */
class BodyIdle extends Error {}
/** The request was still arriving after `requestTimeoutMs` (Node's requestTimeout). */
class RequestTimedOut extends Error {}
/** Node could not parse the rest of the request (a broken chunked body, say). */
class BodyMalformed extends Error {
  constructor(readonly code: string) {
    super(code);
  }
}
/** Taking the body would pass `maxBufferedBytes` over every connection. */
class BodiesOverBudget extends Error {}

/** Bytes of request bodies held over every connection, against `maxBufferedBytes`. */
interface BodyBudget {
  /** Take `n` more bytes; false (nothing taken) when that would pass the limit. */
  take(n: number): boolean;
}

/** A request whose headers are in, until its response is done. */
interface Exchange {
  readonly route: Route;
  readonly res: ServerResponse;
  /** Stop reading its body (set while it is read). */
  stop?: (err: Error) => void;
}

/**
 * Read a request body, refusing more than `max` bytes, a silence longer than `idleMs` between
 * its chunks (or before the first), and any chunk the shared `budget` has no room for. Bytes
 * are taken from `budget` as they arrive; the caller gives them back when the request is done.
 * `exchange.stop` ends the read from outside (the request timed out or broke).
 */
function readBody(req: IncomingMessage, max: number, idleMs: number, budget: BodyBudget, exchange: Exchange): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > max) {
      reject(new BodyTooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let timer: NodeJS.Timeout | undefined;
    const stop = (err: Error): void => {
      clearTimeout(timer);
      exchange.stop = undefined;
      req.removeListener('data', onData);
      req.resume(); // whatever else arrives is discarded, not buffered
      reject(err);
    };
    exchange.stop = stop;
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => stop(new BodyIdle()), idleMs);
      timer.unref();
    };
    const onData = (c: Buffer): void => {
      size += c.length;
      if (size > max) return stop(new BodyTooLarge());
      if (!budget.take(c.length)) return stop(new BodiesOverBudget());
      chunks.push(c);
      arm();
    };
    arm();
    req.on('data', onData);
    req.on('end', () => {
      clearTimeout(timer);
      exchange.stop = undefined;
      resolve(Buffer.concat(chunks));
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      exchange.stop = undefined;
      reject(err);
    });
  });
}

export class ProxyServer extends EventEmitter<ProxyEvents> {
  private stateValue: ProxyState = 'new';
  private readonly server: Server;
  private readonly log: Logger;
  /** Refused connections and requests: a line per kind at most once a minute, repeats counted. */
  private readonly refusals: RateLimitedLog;
  /** Agent connections being served (`maxConnections` bounds it). */
  private openConnections = 0;
  /** Refused connections still being answered (bounded by `maxConnections`, or MIN_REFUSING if more). */
  private readonly refusing = new Set<Socket>();
  /** The request of each connection whose headers are in and whose response is not done. */
  private readonly exchanges = new WeakMap<Socket, Exchange>();
  private readonly now: () => number;
  private readonly conversations = new Map<string, Conversation>();
  private readonly usedIds = new Set<string>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;
  /** Request body bytes held now, over every connection (`maxBufferedBytes` bounds it). */
  private bufferedBytes = 0;
  readonly totals: ProxyTotals = { requests: 0, modelled: 0, passthrough: 0, plansApplied: 0, cacheBreaks: 0, tokensIn: 0, tokensOut: 0, upstreamErrors: 0 };

  constructor(
    private readonly options: ProxyOptions,
    private readonly deps: ProxyDeps,
  ) {
    super();
    this.log = deps.logger.child({ component: 'proxy' });
    this.refusals = new RateLimitedLog(this.log);
    this.now = deps.now ?? Date.now;
    // Receiving a request is bounded: its headers (Node's headersTimeout) and the whole of it
    // (requestTimeout) in time, its body also by idle time and size (readBody). Node's
    // requestTimeout stops applying once the request is received, so a long streamed
    // generation is not cut by it (streamIdleTimeoutMs watches the response).
    const requestTimeout = options.requestTimeoutMs;
    this.server = createServer({
      requestTimeout,
      headersTimeout: Math.min(60_000, requestTimeout),
      // how often Node checks the two timeouts above (its default, 30 s, would let them run late)
      connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(requestTimeout / 4))),
    }, (req, res) => {
      const work = this.handle(req, res).catch((err: unknown) => {
        this.log.error({ err: describeError(err) }, 'proxy request failed');
        sendError(res, routeOf(req.url ?? '/', req.headers).provider, 'unreachable', 'contextd proxy: internal error');
      });
      this.inFlight.add(work);
      void work.finally(() => this.inFlight.delete(work));
    });
    // Connections past the limit are answered 503 as soon as they are accepted. Node's own
    // server.maxConnections would close them with no answer at all (a bare reset to the agent),
    // so every accepted socket passes through admit() before the HTTP server's own listener.
    const serve = this.server.listeners('connection') as ((socket: Socket) => void)[];
    this.server.removeAllListeners('connection');
    this.server.on('connection', (socket: Socket) => this.admit(socket, serve));
    // Requests Node cuts (requestTimeout, headersTimeout, unparseable) are answered in the
    // provider's shape instead of Node's bare 408/400.
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => this.onClientError(err, socket));
  }

  get state(): ProxyState {
    return this.stateValue;
  }

  /** The bound address (after listen). */
  address(): { host: string; port: number } {
    const a = this.server.address() as AddressInfo | null;
    if (!a) throw new ContextdError(ErrorCode.LIFECYCLE, 'proxy is not listening');
    return { host: a.address, port: a.port };
  }

  async listen(): Promise<void> {
    if (this.stateValue !== 'new') throw new ContextdError(ErrorCode.LIFECYCLE, `proxy cannot listen from state ${this.stateValue}`);
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error): void => reject(new ContextdError(ErrorCode.SOCKET_IN_USE, `proxy cannot listen on ${this.options.host}:${this.options.port}: ${err.message}`));
      this.server.once('error', onError);
      this.server.listen(this.options.port, this.options.host, () => {
        this.server.off('error', onError);
        resolve();
      });
    });
    this.stateValue = 'listening';
    this.sweepTimer = setInterval(() => this.sweep(), Math.min(60_000, Math.max(1_000, Math.floor(this.options.idleTimeoutMs / 4))));
    this.sweepTimer.unref();
    const a = this.address();
    this.log.info({ host: a.host, port: a.port, upstreams: { anthropic: displayUrl(this.options.upstreams.anthropic), openai: displayUrl(this.options.upstreams.openai) } }, 'proxy listening');
  }

  /** Stop accepting, let requests in flight finish (cut after `graceMs`), forget nothing stored. Idempotent. */
  close(graceMs = 5_000): Promise<void> {
    this.closing ??= this.doClose(graceMs);
    return this.closing;
  }

  private async doClose(graceMs: number): Promise<void> {
    this.stateValue = 'closing';
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    const grace = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref());
    await Promise.race([Promise.allSettled([...this.inFlight]), grace]);
    this.server.closeAllConnections();
    for (const socket of this.refusing) socket.destroy(); // Node's list does not hold them
    await closed;
    this.refusals.flush(); // refusals counted since the last line
    this.stateValue = 'closed';
  }

  /**
   * Serve an accepted connection, or refuse it with 503 when `maxConnections` are being served.
   * Nothing of the refused connection is read into memory; refused connections still being
   * answered (each for at most REFUSAL_LINGER_MS) are bounded by `maxConnections` (at least
   * MIN_REFUSING), and past that one is closed with no answer.
   */
  private admit(socket: Socket, serve: readonly ((socket: Socket) => void)[]): void {
    const max = this.options.maxConnections;
    if (this.openConnections < max) {
      this.openConnections++;
      socket.once('close', () => this.openConnections--);
      for (const listener of serve) listener.call(this.server, socket);
      return;
    }
    if (this.refusing.size >= Math.max(MIN_REFUSING, max)) {
      socket.destroy();
      this.refusals.warn('drop', { maxConnections: max }, 'agent connection closed unanswered: too many connections (proxy.maxConnections) and too many being refused');
      return;
    }
    this.refusing.add(socket);
    socket.once('close', () => this.refusing.delete(socket));
    refuseConnection(socket, undefined, 'unavailable', `contextd proxy: too many connections (proxy.maxConnections ${max}); retry`, REFUSAL_LINGER_MS);
    this.refusals.warn('connections', { maxConnections: max }, 'agent connection refused with 503: too many connections (proxy.maxConnections)');
  }

  /**
   * Node could not take a request off a connection: it timed out (requestTimeoutMs, or the
   * headers' own limit), or is not HTTP. A body being read is stopped and answered (408, 400)
   * by the request's own handler; otherwise the connection is answered here, in the request's
   * provider shape if its headers were read. Never logs the bytes received (`err.rawPacket`).
   */
  private onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
    if (socket.writableEnded) return; // already answered (and lingering), or being closed
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy(); // the agent is gone: its request handler sees the connection fail
      return;
    }
    const ex = this.exchanges.get(socket);
    if (ex?.stop) {
      ex.stop(err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? new RequestTimedOut() : new BodyMalformed(err.code ?? 'parse error'));
      return;
    }
    if (ex !== undefined) {
      socket.destroy(); // a response of this connection is pending: nothing else can be written
      return;
    }
    const kind: ProxyErrorKind = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'requestTimeout' : err.code === 'HPE_HEADER_OVERFLOW' ? 'headersTooLarge' : 'badRequest';
    const message =
      kind === 'requestTimeout'
        ? `contextd proxy: the request was not received within ${Math.min(60_000, this.options.requestTimeoutMs)} ms (its headers) or ${this.options.requestTimeoutMs} ms (all of it; proxy.requestTimeoutMs)`
        : kind === 'headersTooLarge'
          ? 'contextd proxy: request headers too large'
          : `contextd proxy: malformed HTTP request (${err.code ?? 'parse error'})`;
    this.refusals.warn(`client:${kind}`, { code: err.code ?? null }, `agent request refused with ${PROXY_ERRORS[kind].status}: it could not be read`);
    refuseConnection(socket, undefined, kind, message, REFUSAL_LINGER_MS);
  }

  /** Live conversations. */
  all(): Conversation[] {
    return [...this.conversations.values()];
  }

  /**
   * Compact a conversation now, whatever its headroom (`session.compact`): its next request
   * carries the summaries. Throws UNKNOWN_SESSION for a conversation the proxy does not hold,
   * BUDGET_UNREACHABLE when nothing but its last exchange and anchors is left.
   */
  async compact(sessionId: string, targetHeadroom: number | undefined): Promise<Plan> {
    const c = this.all().find((x) => x.id === sessionId);
    if (!c) throw new ContextdError(ErrorCode.UNKNOWN_SESSION, `unknown session "${sessionId}": the proxy holds no such conversation`, { sessionId });
    const plan = await c.compactNow(targetHeadroom);
    if (!plan) throw new ContextdError(ErrorCode.BUDGET_UNREACHABLE, `nothing in session "${sessionId}" can be compacted: only its last exchange and anchors are left`, { sessionId });
    this.totals.plansApplied++;
    this.emit('compacted', c, plan);
    return plan;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = req.url ?? '/';
    const method = req.method ?? 'GET';
    const route = routeOf(path, req.headers);
    if (this.stateValue !== 'listening') {
      refuseRequest(req, res, route.provider, 'unavailable', 'contextd proxy is shutting down; retry', REFUSAL_LINGER_MS);
      return;
    }
    let held = 0;
    const budget: BodyBudget = {
      take: (n) => {
        if (this.bufferedBytes + n > this.options.maxBufferedBytes) return false;
        this.bufferedBytes += n;
        held += n;
        return true;
      },
    };
    const ex: Exchange = { route, res };
    const socket = req.socket;
    this.exchanges.set(socket, ex);
    res.once('close', () => {
      if (this.exchanges.get(socket) === ex) this.exchanges.delete(socket);
    });
    try {
      await this.exchange(req, res, path, method, route, budget, ex);
    } finally {
      this.bufferedBytes -= held;
    }
  }

  private async exchange(req: IncomingMessage, res: ServerResponse, path: string, method: string, route: Route, budget: BodyBudget, ex: Exchange): Promise<void> {
    let body: Buffer;
    try {
      body = await readBody(req, this.options.maxBodyBytes, this.options.bodyIdleTimeoutMs, budget, ex);
    } catch (err) {
      const refusal = this.refusalOf(err);
      if (refusal) {
        // the path without its query (which may carry a key); never a header
        this.refusals.warn(refusal.log, { path: pathOf(path), ...refusal.fields }, refusal.log);
        refuseRequest(req, res, route.provider, refusal.kind, refusal.message, refusal.lingerMs);
        return;
      }
      this.log.info({ path: pathOf(path), err: describeError(err) }, 'agent connection failed while sending its request');
      res.destroy();
      return;
    }
    this.totals.requests++;
    const started = performance.now();
    let prepared: Prepared | undefined;
    let conversation: Conversation | undefined;
    let out = body;
    if (route.format && method === 'POST') {
      const modelled = await this.model(route.format, req, body);
      if (modelled) {
        ({ prepared, conversation } = modelled);
        out = modelled.out;
      }
    }
    if (!prepared) this.totals.passthrough++;
    const upstream = new URL(route.provider === 'anthropic' ? this.options.upstreams.anthropic : this.options.upstreams.openai);
    const result = await forward(
      { provider: route.provider, upstream, path, method, headers: req.headers, body: out, upstreamTimeoutMs: this.options.upstreamTimeoutMs, streamIdleTimeoutMs: this.options.streamIdleTimeoutMs },
      res,
    );
    this.logResult(path, method, result, performance.now() - started, conversation, prepared);
  }

  /** How a body that could not be read is answered; undefined when the agent's connection failed. */
  private refusalOf(err: unknown): { kind: ProxyErrorKind; message: string; log: string; fields: Record<string, number>; lingerMs: number } | undefined {
    const o = this.options;
    if (err instanceof BodyTooLarge) {
      return { kind: 'tooLarge', message: `contextd proxy: request body exceeds ${o.maxBodyBytes} bytes (proxy.maxBodyBytes)`, log: 'request body too large: refused with 413', fields: { maxBodyBytes: o.maxBodyBytes }, lingerMs: REFUSAL_LINGER_MS };
    }
    if (err instanceof BodyIdle) {
      // the agent has been silent: nothing is left unread, so the connection closes at once
      return { kind: 'requestTimeout', message: `contextd proxy: the request body sent nothing for ${o.bodyIdleTimeoutMs} ms (proxy.bodyIdleTimeoutMs)`, log: 'request body stalled: refused with 408, connection closed', fields: { bodyIdleTimeoutMs: o.bodyIdleTimeoutMs }, lingerMs: 0 };
    }
    if (err instanceof RequestTimedOut) {
      return { kind: 'requestTimeout', message: `contextd proxy: the request was not received within ${o.requestTimeoutMs} ms (proxy.requestTimeoutMs)`, log: 'request still arriving after requestTimeoutMs: refused with 408, connection closed', fields: { requestTimeoutMs: o.requestTimeoutMs }, lingerMs: REFUSAL_LINGER_MS };
    }
    if (err instanceof BodyMalformed) {
      // the parser is broken for this connection: nothing more of it can be read
      return { kind: 'badRequest', message: `contextd proxy: malformed HTTP request body (${err.code})`, log: 'malformed request body: refused with 400, connection closed', fields: {}, lingerMs: 0 };
    }
    if (err instanceof BodiesOverBudget) {
      return { kind: 'unavailable', message: `contextd proxy: too many request bodies are being received at once (proxy.maxBufferedBytes ${o.maxBufferedBytes}); retry`, log: 'request bodies over the buffer limit: refused with 503', fields: { maxBufferedBytes: o.maxBufferedBytes }, lingerMs: REFUSAL_LINGER_MS };
    }
    return undefined;
  }

  /** Parse, model and rewrite a request; undefined when it is forwarded as sent. */
  private async model(format: ProviderFormat, req: IncomingMessage, body: Buffer): Promise<{ out: Buffer; prepared: Prepared; conversation: Conversation } | undefined> {
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding !== 'identity') return undefined; // compressed: forwarded untouched
    let json: JsonObject;
    try {
      const v: unknown = JSON.parse(body.toString('utf8'));
      if (!isObject(v)) return undefined;
      json = v;
    } catch {
      return undefined; // the provider answers malformed JSON with its own error
    }
    try {
      // The conversation is found from the system prompt and first message alone (the recall
      // rewrite leaves both as they are), so the request is modelled once, as forwarded.
      let conversation: Conversation | undefined;
      const conversationOf = (): Conversation => (conversation ??= this.conversationFor(format, req, json, format.fingerprint(json)));
      let input = json;
      if (this.options.recallTool) {
        // The model sees (and contextd models) the request with the tool offered and its calls answered.
        const recall = withRecall(format.name, json, (handle) => this.recallText(conversationOf(), handle));
        input = recall.body;
        if (recall.answered > 0) this.log.debug({ sessionId: conversationOf().id, handles: recall.handles }, 'recall tool calls answered from the archive');
      }
      const parsed = format.parse(input);
      if (parsed.items.length === 0) return undefined;
      conversation = conversationOf();
      const prepared = await conversation.prepare(format, parsed, input);
      this.totals.modelled++;
      this.totals.tokensIn += prepared.tokensIn;
      this.totals.tokensOut += prepared.tokensOut;
      if (prepared.plan) this.totals.plansApplied++;
      if (prepared.cacheBreak) this.totals.cacheBreaks++;
      this.emit('request', conversation, prepared);
      const out = prepared.body === json ? body : Buffer.from(JSON.stringify(prepared.body), 'utf8');
      return { out, prepared, conversation };
    } catch (err) {
      // Never break the agent over our own trouble: forward what it sent.
      this.log.error({ err: describeError(err), format: format.name }, 'could not model the request: forwarded unchanged');
      return undefined;
    }
  }

  /** The recall tool's answer for a handle the model named in a conversation. */
  private recallText(c: Conversation, handle: string | undefined): string {
    const named = handle === undefined ? 'no handle' : JSON.stringify(handle.slice(0, 80));
    if (handle === undefined || !RECALL_HANDLE_RE.test(handle)) {
      return `${RECALL_TOOL_NAME}: ${named} is not a recall handle. Summaries quote handles as [contextd recall h_…]: h_ followed by 16 hex digits.`;
    }
    // Bounded by the room a plan frees (hysteresis × window): a recall never pushes the request past the reserve on its own.
    const room = Math.max(RECALL_MIN_TOKENS, Math.floor(c.model.budget().total * this.options.hysteresis));
    return c.recallAnswer(handle, room, () => this.readRecall(c, handle, room));
  }

  /** The recall answer from the archive: the originals under `handle`, cut to `room` tokens. */
  private readRecall(c: Conversation, handle: string, room: number): { text: string; keep: boolean } {
    let entry: ReturnType<ArchiveSink['get']>;
    try {
      entry = this.deps.archive?.get(handle);
    } catch (err) {
      this.log.error({ sessionId: c.id, handle, err: describeError(err) }, 'recall tool: archive unreadable');
      return { text: `${RECALL_TOOL_NAME}: the archive could not be read just now; the originals of ${handle} are kept, try again later.`, keep: false };
    }
    if (!entry || (entry.sessionId !== c.id && entry.sessionId !== c.agentSessionId)) {
      return { text: `${RECALL_TOOL_NAME}: no originals are archived under ${handle} for this conversation. Use a handle quoted in a summary you can see.`, keep: false };
    }
    const body = fitTokens(archivedText(entry.messages), room, (t) => this.deps.tokenCounter.count(t));
    const cut = body.truncated ? `\n[… cut to about ${room} of ${body.tokens} tokens to keep the request within its context budget; the rest stays archived: contextd recall ${handle}]` : '';
    return { text: `Originals archived under ${handle} (${entry.messages.length} message(s), ${entry.tokens} tokens, summarized as ${entry.reason}):\n${body.text}${cut}`, keep: true };
  }

  private conversationFor(format: ProviderFormat, req: IncomingMessage, body: JsonObject, fingerprint: string): Conversation {
    const hint = sessionHint(req.headers, body);
    const fp = shortHash(`${format.name}\u0000${fingerprint}`);
    const key = `${hint ?? ''}|${fp}`;
    const found = this.conversations.get(key);
    if (found) return found;
    let id = hint ? `proxy-${hint}` : `proxy-${fp}`;
    if (this.usedIds.has(id)) id = `${id}-${fp.slice(0, 8)}`;
    this.usedIds.add(id);
    const c = new Conversation(id, hint, format.name, {
      tokenCounter: this.deps.tokenCounter,
      summarizer: this.deps.summarizer,
      archive: this.deps.archive,
      archiveFilter: this.deps.archiveFilter,
      logger: this.deps.logger,
      now: this.now,
      budgetTokens: this.options.budgetTokens,
      reserveRatio: this.options.reserveRatio,
      hysteresis: this.options.hysteresis,
    });
    this.conversations.set(key, c);
    this.log.info({ sessionId: id, agentSessionId: hint ?? null, format: format.name }, 'proxied conversation opened');
    this.emit('opened', c);
    if (this.conversations.size > this.options.maxConversations) this.evictOldest();
    return c;
  }

  private evictOldest(): void {
    let oldest: [string, Conversation] | undefined;
    for (const e of this.conversations) if (!oldest || e[1].lastActivityAt < oldest[1].lastActivityAt) oldest = e;
    if (oldest) this.forget(oldest[0], oldest[1], `more than ${this.options.maxConversations} conversations`);
  }

  private sweep(): void {
    const cutoff = this.now() - this.options.idleTimeoutMs;
    for (const [key, c] of this.conversations) if (c.lastActivityAt < cutoff) this.forget(key, c, 'idle');
  }

  private forget(key: string, c: Conversation, why: string): void {
    this.conversations.delete(key);
    this.usedIds.delete(c.id);
    this.log.info({ sessionId: c.id, why, requests: c.stats.requests, plansApplied: c.stats.plansApplied }, 'proxied conversation closed');
    this.emit('closed', c, why);
  }

  private logResult(path: string, method: string, r: ForwardResult, ms: number, c: Conversation | undefined, p: Prepared | undefined): void {
    if (r.outcome !== 'ok' && r.outcome !== 'client-gone') this.totals.upstreamErrors++;
    const fields = {
      method,
      path: pathOf(path),
      status: r.status ?? null,
      outcome: r.outcome,
      bytes: r.bytes,
      firstByteMs: r.firstByteMs === undefined ? null : Math.round(r.firstByteMs),
      ms: Math.round(ms),
      ...(c && p ? { sessionId: c.id, tokensIn: p.tokensIn, tokensOut: p.tokensOut, replacements: p.replacements, cacheBreak: p.cacheBreak } : {}),
    };
    if (r.outcome === 'ok' || r.outcome === 'client-gone') this.log.debug(fields, 'proxied');
    else this.log.warn(fields, 'upstream failed');
  }
}

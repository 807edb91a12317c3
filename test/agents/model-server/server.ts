/**
 * The scripted model server: an HTTP server on 127.0.0.1 speaking enough of the Anthropic
 * Messages API and the OpenAI Responses API for Claude Code and Codex CLI to run a scripted
 * task against it, recording every request. See `index.ts` for the API.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  anthropicBlocks,
  anthropicConversationEnd,
  anthropicError,
  anthropicMessage,
  anthropicPairingError,
  anthropicSse,
  anthropicToolNames,
} from './anthropic.js';
import { countTokens, requestInputTokens, textOf, type ConversationEnd } from './conversation.js';
import { responsesConversationEnd, responsesError, responsesOutput, responsesPairingError, responsesSse, responsesToolNames } from './openai.js';
import { COMPACTION_REQUEST_RE, CONTINUATION_RE, QUOTED_HANDLE_RE, RECALL_CALL_RE, RECALL_TOOL, cursorOfCallId, nextCursor, stepAt, turnForPrompt, type Cursor, type Script, type Step } from './script.js';

type Json = Record<string, unknown>;

/** Which API a request spoke. */
export type ApiName = 'anthropic' | 'openai';
/** What the server took a request to be. */
export type RequestKind = 'main' | 'compaction' | 'side' | 'count_tokens' | 'invalid' | 'unknown';

/** One request as the server received it. */
export interface RecordedRequest {
  readonly seq: number;
  readonly api: ApiName | undefined;
  readonly method: string;
  readonly path: string;
  /** Request headers without credentials (`authorization`, `x-api-key` are dropped). */
  readonly headers: Readonly<Record<string, string>>;
  /** The parsed JSON body (undefined when there was none or it was not JSON). */
  readonly body: Json | undefined;
  readonly kind: RequestKind;
  /** The scripted step answered, for `main` requests. */
  readonly cursor?: Cursor;
  readonly status: number;
  /** The 400 message, for `invalid` requests. */
  readonly error?: string;
  /** The input size reported back as usage. */
  readonly inputTokens?: number;
  /** The handle of a `contextd_recall` call the server answered this request with (`Script.recallOnce`). */
  readonly recalled?: string;
}

export interface ModelServerOptions {
  readonly script: Script;
  /** Absolute workspace path: relative paths in the script are made absolute for tools that need it (Claude Code's Read/Edit). */
  readonly workspace?: string;
  /** The server closes itself after this long. Default 10 minutes. */
  readonly lifetimeMs?: number;
  /** Largest request body accepted, bytes. Default 32 MiB. */
  readonly maxBodyBytes?: number;
}

export interface ModelServer {
  /** `http://127.0.0.1:<port>` (no trailing slash, no `/v1`). */
  readonly url: string;
  readonly port: number;
  /** Every request so far, in arrival order. */
  readonly requests: readonly RecordedRequest[];
  /** Requests of one kind. */
  requestsOf(kind: RequestKind): RecordedRequest[];
  /** Resolves with the first recorded request satisfying `pred` (already recorded or future). */
  waitFor(pred: (r: RecordedRequest) => boolean, timeoutMs?: number): Promise<RecordedRequest>;
  /** Stops accepting, drops open connections; idempotent (the same promise twice). */
  close(): Promise<void>;
  /** Resolves when the server has closed, by `close()` or at the end of its lifetime. */
  readonly closed: Promise<void>;
}

const DROPPED_HEADERS = new Set(['authorization', 'x-api-key', 'cookie']);

function readBody(req: IncomingMessage, max: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= max) chunks.push(c);
    });
    req.on('end', () => resolve(size > max ? 'too-large' : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const data = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) });
  res.end(data);
}

function sendSse(res: ServerResponse, stream: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.end(stream);
}

/** Start a scripted model server on 127.0.0.1 with an ephemeral port. */
export async function startModelServer(opts: ModelServerOptions): Promise<ModelServer> {
  const script = opts.script;
  const maxBody = opts.maxBodyBytes ?? 32 * 1024 * 1024;
  const requests: RecordedRequest[] = [];
  const waiters: { pred: (r: RecordedRequest) => boolean; resolve: (r: RecordedRequest) => void }[] = [];
  const lastServed: Partial<Record<ApiName, Cursor>> = {};
  let n = 0;

  const record = (r: Omit<RecordedRequest, 'seq'>): void => {
    const full = { ...r, seq: requests.length };
    requests.push(full);
    for (const w of [...waiters]) {
      if (w.pred(full)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(full);
      }
    }
  };

  let recallIssued = false;
  /** The handle to recall now (Script.recallOnce): once, when a summary is quoted and the tool offered. */
  const recallNow = (body: Json, tools: readonly string[]): string | undefined => {
    if (!script.recallOnce || recallIssued || !tools.includes(RECALL_TOOL)) return undefined;
    const handle = QUOTED_HANDLE_RE.exec(JSON.stringify(body))?.[1];
    if (handle) recallIssued = true;
    return handle;
  };

  /** The step a main request gets, or undefined when the script has nothing more to say. */
  const pick = (api: ApiName, end: ConversationEnd): { cursor: Cursor; step: Step } | undefined => {
    let cursor: Cursor | undefined;
    if (end.kind === 'tool-result' && RECALL_CALL_RE.test(end.callId)) {
      // the answer to a recall: go on after the last step served
      const last = lastServed[api];
      cursor = last ? nextCursor(script, last) : undefined;
    } else if (end.kind === 'tool-result') {
      const issued = cursorOfCallId(end.callId);
      cursor = issued ? nextCursor(script, issued) : undefined;
    } else if (end.kind === 'prompt' && !CONTINUATION_RE.test(end.text)) {
      cursor = { turn: turnForPrompt(script, end.text), step: 0 };
    } else {
      const last = lastServed[api];
      cursor = last ? nextCursor(script, last) : { turn: turnForPrompt(script, ''), step: 0 };
    }
    const step = cursor && stepAt(script, cursor);
    if (!cursor || !step) return undefined;
    lastServed[api] = cursor;
    return { cursor, step };
  };

  const handleAnthropic = (res: ServerResponse, path: string, headers: Record<string, string>, body: Json): void => {
    const base = { api: 'anthropic' as const, method: 'POST', path, headers, body };
    const messages = Array.isArray(body['messages']) ? body['messages'] : [];
    const inputTokens = requestInputTokens([body['system'], body['tools'], messages]);
    if (path.startsWith('/v1/messages/count_tokens')) {
      record({ ...base, kind: 'count_tokens', status: 200, inputTokens });
      sendJson(res, 200, { input_tokens: inputTokens });
      return;
    }
    const pairing = anthropicPairingError(messages);
    if (pairing) {
      record({ ...base, kind: 'invalid', status: 400, error: pairing });
      sendJson(res, 400, anthropicError('invalid_request_error', pairing));
      return;
    }
    const end = anthropicConversationEnd(body);
    const tools = anthropicToolNames(body);
    let kind: RequestKind;
    let content: Json[];
    let cursor: Cursor | undefined;
    let recalled: string | undefined;
    if (end.kind !== 'none' && COMPACTION_REQUEST_RE.test(end.text)) {
      kind = 'compaction';
      content = [{ type: 'text', text: script.summary }];
    } else if (!tools.includes('Bash')) {
      kind = 'side';
      content = [{ type: 'text', text: script.sideReply ?? 'ok' }];
    } else {
      kind = 'main';
      recalled = recallNow(body, tools);
      if (recalled) content = [{ type: 'text', text: 'Recalling the originals of a summary.' }, { type: 'tool_use', id: `toolu_recall_${n++}`, name: RECALL_TOOL, input: { handle: recalled } }];
      else {
        const picked = pick('anthropic', end);
        cursor = picked?.cursor;
        content = picked ? anthropicBlocks(picked.step, picked.cursor, n++, opts.workspace) : [{ type: 'text', text: 'Nothing more to do.' }];
      }
    }
    const message = anthropicMessage(`msg_ctxd_${n++}`, String(body['model'] ?? 'scripted'), content, inputTokens, countTokens(textOf(content)) + 1);
    record({ ...base, kind, status: 200, inputTokens, ...(cursor ? { cursor } : {}), ...(recalled ? { recalled } : {}) });
    if (body['stream'] === true) sendSse(res, anthropicSse(message));
    else sendJson(res, 200, message);
  };

  const handleResponses = (res: ServerResponse, path: string, headers: Record<string, string>, body: Json): void => {
    const base = { api: 'openai' as const, method: 'POST', path, headers, body };
    const pairing = responsesPairingError(body);
    if (pairing) {
      record({ ...base, kind: 'invalid', status: 400, error: pairing });
      sendJson(res, 400, responsesError(pairing));
      return;
    }
    const inputTokens = requestInputTokens([body['instructions'], body['tools'], body['input']]);
    const end = responsesConversationEnd(body);
    const tools = responsesToolNames(body);
    let kind: RequestKind;
    let output: Json[];
    let cursor: Cursor | undefined;
    let recalled: string | undefined;
    if (end.kind !== 'none' && COMPACTION_REQUEST_RE.test(end.text)) {
      kind = 'compaction';
      output = responsesOutput({ text: script.summary }, { turn: 0, step: 0 }, n++, tools);
    } else if (tools.length === 0) {
      kind = 'side';
      output = responsesOutput({ text: script.sideReply ?? 'ok' }, { turn: 0, step: 0 }, n++, tools);
    } else {
      kind = 'main';
      recalled = recallNow(body, tools);
      if (recalled) output = [{ id: `fc_${n}`, status: 'completed', type: 'function_call', name: RECALL_TOOL, arguments: JSON.stringify({ handle: recalled }), call_id: `call_recall_${n++}` }];
      else {
        const picked = pick('openai', end);
        cursor = picked?.cursor;
        output = responsesOutput(picked?.step ?? { text: 'Nothing more to do.' }, picked?.cursor ?? { turn: 0, step: 0 }, n++, tools);
      }
    }
    record({ ...base, kind, status: 200, inputTokens, ...(cursor ? { cursor } : {}), ...(recalled ? { recalled } : {}) });
    sendSse(res, responsesSse(`resp_ctxd_${n++}`, String(body['model'] ?? 'scripted'), output, inputTokens, countTokens(textOf(output)) + 1));
  };

  const server = createServer((req, res) => {
    void (async () => {
      const path = req.url ?? '/';
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (!DROPPED_HEADERS.has(k) && typeof v === 'string') headers[k] = v;
      const raw = await readBody(req, maxBody);
      const api: ApiName | undefined = path.startsWith('/v1/messages') ? 'anthropic' : /\/responses(\?|$)/.test(path) ? 'openai' : undefined;
      if (raw === 'too-large') {
        record({ api, method: req.method ?? '', path, headers, body: undefined, kind: 'invalid', status: 413, error: 'body too large' });
        sendJson(res, 413, { error: { message: 'request body too large' } });
        return;
      }
      let body: Json | undefined;
      try {
        const parsed: unknown = raw.length > 0 ? JSON.parse(raw.toString('utf8')) : undefined;
        body = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Json) : undefined;
      } catch {
        body = undefined;
      }
      if (req.method !== 'POST' || !api || !body) {
        record({ api, method: req.method ?? '', path, headers, body, kind: 'unknown', status: 404 });
        sendJson(res, 404, { error: { type: 'not_found_error', message: `no scripted route for ${req.method} ${path}` } });
        return;
      }
      if (api === 'anthropic') handleAnthropic(res, path, headers, body);
      else handleResponses(res, path, headers, body);
    })().catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(err) } });
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  let closing: Promise<void> | undefined;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve) => {
      clearTimeout(lifetime);
      server.close(() => {
        resolveClosed();
        resolve();
      });
      server.closeAllConnections();
    });
    return closing;
  };
  const lifetime = setTimeout(() => void close(), opts.lifetimeMs ?? 600_000);
  lifetime.unref();

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    requestsOf: (kind) => requests.filter((r) => r.kind === kind),
    waitFor(pred, timeoutMs = 60_000) {
      const found = requests.find(pred);
      if (found) return Promise.resolve(found);
      return new Promise<RecordedRequest>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1);
          reject(new Error(`model server: no matching request within ${timeoutMs} ms (${requests.length} recorded)`));
        }, timeoutMs);
        const w = {
          pred,
          resolve: (r: RecordedRequest) => {
            clearTimeout(timer);
            resolve(r);
          },
        };
        waiters.push(w);
      });
    },
    close,
    closed,
  };
}

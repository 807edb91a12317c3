/**
 * RPC dispatch, the pure core of the server: one framed line in, at most one response out.
 * No sockets here; the server (server.ts) feeds lines and writes what comes back.
 *
 * Rules:
 * - an oversized line → -32004 with id null (the connection stays usable);
 * - invalid UTF-8 or JSON → -32700, id null; blank lines are ignored;
 * - a batch (JSON array) → -32600: contextd takes one object per line, batches are not supported;
 * - a non-object or bad envelope → -32600 (echoing the id when a valid one is present);
 * - unknown method → -32601; handler failures → mapped by `toRpcError`, never a stack;
 * - notifications from the client (no `id`) never get a response, even on error.
 */
import type { FramedLine } from '../util/framer.js';
import type { Logger } from '../util/logger.js';
import { RpcError, RpcErrorCode, methodNotFound, toRpcError } from './errors.js';
import { formatIssues, type Handler } from './handlers.js';
import {
  InitializeParamsSchema,
  JsonRpcIdSchema,
  JsonRpcNotificationSchema,
  JsonRpcRequestSchema,
  METHODS,
  PROTOCOL_VERSION,
  type JsonRpcErrorResponse,
  type JsonRpcId,
  type JsonRpcResponse,
} from './protocol.js';

/** Per-connection facts the dispatcher reads and updates. */
export interface DispatchConnection {
  readonly id: string;
  initialized: boolean;
  client?: { name: string; version: string };
  capabilities?: Readonly<Record<string, unknown>>;
}

export interface DispatcherOptions {
  readonly handlers: Readonly<Record<string, Handler>>;
  readonly serverInfo: { readonly name: string; readonly version: string };
  /** Refuse every method but `initialize` until it succeeded (-32005). Default false. */
  readonly requireInitialize: boolean;
  readonly maxLineBytes: number;
  /**
   * A handler still running after this long is answered with -32006 (its eventual result is
   * dropped), so one stuck call cannot hold back the in-order responses behind it. 0 = never.
   */
  readonly handlerTimeoutMs: number;
  readonly logger: Logger;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function errorResponse(id: JsonRpcId | null, err: RpcError): JsonRpcErrorResponse {
  return { jsonrpc: '2.0', id, error: err.toJSON() };
}

/** Turns framed lines into responses by calling the handlers it was given. */
export class Dispatcher {
  private readonly methods: readonly string[];

  constructor(private readonly options: DispatcherOptions) {
    const names = new Set(Object.keys(options.handlers));
    names.add(METHODS.initialize);
    this.methods = [...names].sort();
  }

  /** Method names this dispatcher answers. */
  get methodNames(): readonly string[] {
    return this.methods;
  }

  /** Handle one line. Resolves to the response to send, or undefined for none. Never rejects. */
  async handleLine(line: FramedLine, conn: DispatchConnection): Promise<JsonRpcResponse | undefined> {
    const log = this.options.logger;
    if (line.oversized) {
      log.warn({ connectionId: conn.id, bytes: line.length, maxLineBytes: this.options.maxLineBytes }, 'request line too large');
      return errorResponse(
        null,
        new RpcError(
          RpcErrorCode.REQUEST_TOO_LARGE,
          `request of ${line.length} bytes exceeds the ${this.options.maxLineBytes}-byte line limit; send smaller requests (this connection is still open)`,
          { bytes: line.length, maxLineBytes: this.options.maxLineBytes },
        ),
      );
    }
    let text: string;
    try {
      text = utf8.decode(line.bytes);
    } catch {
      return errorResponse(null, new RpcError(RpcErrorCode.PARSE_ERROR, 'parse error: the line is not valid UTF-8'));
    }
    if (text.trim() === '') return undefined;
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      log.debug({ connectionId: conn.id, bytes: line.length }, 'unparseable line');
      return errorResponse(null, new RpcError(RpcErrorCode.PARSE_ERROR, `parse error: ${why}; send one JSON object per line`));
    }
    if (Array.isArray(raw)) {
      return errorResponse(
        null,
        new RpcError(RpcErrorCode.INVALID_REQUEST, 'batch requests are not supported: send one JSON-RPC object per line'),
      );
    }
    if (raw === null || typeof raw !== 'object') {
      return errorResponse(null, new RpcError(RpcErrorCode.INVALID_REQUEST, 'invalid request: expected a JSON-RPC 2.0 object'));
    }
    const obj = raw as Record<string, unknown>;
    const hasId = Object.prototype.hasOwnProperty.call(obj, 'id');
    if (!hasId) {
      const note = JsonRpcNotificationSchema.safeParse(obj);
      if (!note.success) {
        return errorResponse(null, new RpcError(RpcErrorCode.INVALID_REQUEST, `invalid request: ${formatIssues(note.error.issues)}`));
      }
      await this.runNotification(note.data.method, note.data.params, conn);
      return undefined;
    }
    const req = JsonRpcRequestSchema.safeParse(obj);
    if (!req.success) {
      const id = JsonRpcIdSchema.safeParse(obj['id']);
      return errorResponse(
        id.success ? id.data : null,
        new RpcError(RpcErrorCode.INVALID_REQUEST, `invalid request: ${formatIssues(req.error.issues)}`),
      );
    }
    const { id, method, params } = req.data;
    const started = Date.now();
    try {
      const result = await this.call(method, params ?? {}, conn);
      log.debug({ connectionId: conn.id, method, id, ms: Date.now() - started }, 'request');
      return { jsonrpc: '2.0', id, result: result === undefined ? null : result };
    } catch (err) {
      const ref = `${conn.id}/${String(id)}`;
      const rpc = toRpcError(err, ref);
      if (rpc.code === RpcErrorCode.INTERNAL_ERROR) {
        log.error({ connectionId: conn.id, method, id, ref, err }, 'handler failed');
      } else {
        log.info({ connectionId: conn.id, method, id, code: rpc.code, msg: rpc.message }, 'request refused');
      }
      return errorResponse(id, rpc);
    }
  }

  private async runNotification(method: string, params: unknown, conn: DispatchConnection): Promise<void> {
    try {
      await this.call(method, params ?? {}, conn);
    } catch (err) {
      // Notifications get no response, even on error; the log is the only trace.
      this.options.logger.info({ connectionId: conn.id, method, err: toRpcError(err).message }, 'notification from client failed');
    }
  }

  private call(method: string, params: unknown, conn: DispatchConnection): Promise<unknown> {
    const ms = this.options.handlerTimeoutMs;
    const running = this.invoke(method, params, conn);
    if (ms <= 0) return running;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new RpcError(RpcErrorCode.UNAVAILABLE, `${method} did not finish within ${ms} ms; the daemon is busy, try again`)),
        ms,
      );
    });
    // Whatever the handler does after the timeout is ignored, but never left unhandled.
    running.catch(() => undefined);
    return Promise.race([running, timeout]).finally(() => clearTimeout(timer));
  }

  private async invoke(method: string, params: unknown, conn: DispatchConnection): Promise<unknown> {
    const handler = Object.prototype.hasOwnProperty.call(this.options.handlers, method) ? this.options.handlers[method] : undefined;
    if (method === METHODS.initialize) return this.initialize(params, conn, handler);
    if (!handler) throw methodNotFound(method, this.methods);
    if (this.options.requireInitialize && !conn.initialized) {
      throw new RpcError(RpcErrorCode.NOT_INITIALIZED, `call initialize before ${method} on this connection`);
    }
    return await handler(params, { connectionId: conn.id, method });
  }

  private async initialize(params: unknown, conn: DispatchConnection, handler: Handler | undefined): Promise<unknown> {
    const parsed = InitializeParamsSchema.safeParse(params);
    if (!parsed.success) {
      throw new RpcError(RpcErrorCode.INVALID_PARAMS, `invalid params for initialize: ${formatIssues(parsed.error.issues)}`);
    }
    const result = handler
      ? await handler(params, { connectionId: conn.id, method: METHODS.initialize })
      : { server: { ...this.options.serverInfo }, protocolVersion: PROTOCOL_VERSION };
    conn.initialized = true;
    conn.client = { ...parsed.data.client };
    if (parsed.data.capabilities) conn.capabilities = { ...parsed.data.capabilities };
    this.options.logger.info({ connectionId: conn.id, client: conn.client, capabilities: conn.capabilities }, 'client initialized');
    return result;
  }
}

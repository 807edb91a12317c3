/**
 * Wire schemas of the contextd socket protocol (design §6): JSON-RPC 2.0, one JSON object
 * per line, UTF-8. Pure: no sockets, no fs. Everything that crosses the socket is validated
 * here once; code behind the boundary trusts the inferred types.
 *
 * Conventions:
 * - Envelopes are `.strict()`: a misspelled `jsonrpc`/`params` key is an invalid request.
 * - Params are strict too: a typo such as `dryrun` must fail loudly rather than silently run a
 *   real compaction. The one exception is `initialize.capabilities`, which is loose so that a
 *   newer client can announce capabilities an older daemon simply ignores.
 * - Omitted `params` are treated as `{}` by the server (see dispatch.ts).
 * - Results and notifications are described by loose schemas (extra fields allowed): the daemon
 *   may add fields without breaking clients.
 */
import { z } from 'zod';

/** Version of this protocol, returned by `initialize`. Bumped on incompatible changes only. */
export const PROTOCOL_VERSION = 1;

/** Requests an agent may send (design §6). */
export const METHODS = {
  initialize: 'initialize',
  subscribe: 'session.subscribe',
  headroom: 'session.headroom',
  sections: 'session.sections',
  compact: 'session.compact',
  ack: 'compaction.ack',
  recall: 'section.recall',
  endSession: 'session.end',
  bootstrap: 'warm.bootstrap',
  status: 'daemon.status',
  search: 'archive.search',
  sync: 'session.sync',
} as const;
export type MethodName = (typeof METHODS)[keyof typeof METHODS];

/** Notifications the daemon pushes to subscribed connections. */
export const NOTIFICATIONS = {
  compactionProposed: 'compaction.proposed',
  headroom: 'session.headroom',
} as const;
export type NotificationName = (typeof NOTIFICATIONS)[keyof typeof NOTIFICATIONS];

// ---------------------------------------------------------------------------------------------
// Envelope

export const JsonRpcIdSchema = z.union([z.string(), z.number().int()]);
/** A request id. Strings and integers; `null` is reserved for errors about unparseable input. */
export type JsonRpcId = z.infer<typeof JsonRpcIdSchema>;

const ParamsFieldSchema = z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]).optional();
const MethodFieldSchema = z.string().min(1);

export const JsonRpcRequestSchema = z.strictObject({
  jsonrpc: z.literal('2.0'),
  id: JsonRpcIdSchema,
  method: MethodFieldSchema,
  params: ParamsFieldSchema,
});
export type JsonRpcRequest = z.infer<typeof JsonRpcRequestSchema>;

export const JsonRpcNotificationSchema = z.strictObject({
  jsonrpc: z.literal('2.0'),
  method: MethodFieldSchema,
  params: ParamsFieldSchema,
});
export type JsonRpcNotification = z.infer<typeof JsonRpcNotificationSchema>;

export const JsonRpcErrorObjectSchema = z.strictObject({
  code: z.number().int(),
  message: z.string(),
  data: z.unknown().optional(),
});
export type JsonRpcErrorObject = z.infer<typeof JsonRpcErrorObjectSchema>;

export const JsonRpcSuccessSchema = z.strictObject({
  jsonrpc: z.literal('2.0'),
  id: JsonRpcIdSchema,
  result: z.unknown(),
});
export type JsonRpcSuccess = z.infer<typeof JsonRpcSuccessSchema>;

export const JsonRpcErrorResponseSchema = z.strictObject({
  jsonrpc: z.literal('2.0'),
  id: JsonRpcIdSchema.nullable(),
  error: JsonRpcErrorObjectSchema,
});
export type JsonRpcErrorResponse = z.infer<typeof JsonRpcErrorResponseSchema>;

export const JsonRpcResponseSchema = z.union([JsonRpcSuccessSchema, JsonRpcErrorResponseSchema]);
export type JsonRpcResponse = z.infer<typeof JsonRpcResponseSchema>;

/** What a client may send to the server: a request (has `id`) or a notification (no `id`). */
export const ClientMessageSchema = z.union([JsonRpcRequestSchema, JsonRpcNotificationSchema]);
/** What the server may send to a client: a response or a notification. */
export const ServerMessageSchema = z.union([JsonRpcSuccessSchema, JsonRpcErrorResponseSchema, JsonRpcNotificationSchema]);

// ---------------------------------------------------------------------------------------------
// Params, one schema per method

const nonEmpty = z.string().min(1);
const absolutePath = z.string().min(1).refine((p) => p.startsWith('/'), { message: 'must be an absolute path' });

export const InitializeParamsSchema = z.strictObject({
  client: z.strictObject({ name: nonEmpty, version: z.string() }),
  capabilities: z.looseObject({ applyEdits: z.boolean().optional() }).optional(),
});

/**
 * `{}` (the daemon picks the most recently active session), `{sessionId}` or `{transcriptPath}`.
 * Giving both is an error.
 */
export const SubscribeParamsSchema = z
  .strictObject({ sessionId: nonEmpty.optional(), transcriptPath: absolutePath.optional() })
  .refine((p) => p.sessionId === undefined || p.transcriptPath === undefined, {
    message: 'give either sessionId or transcriptPath, not both',
  });

export const SessionParamsSchema = z.strictObject({ sessionId: nonEmpty });

export const CompactParamsSchema = z.strictObject({
  sessionId: nonEmpty,
  /** Headroom (0–1 share of the window left free) the plan should reach. */
  targetHeadroom: z.number().gt(0).lt(1).optional(),
  /** Plan only: nothing is archived and no plan is pushed or awaited. */
  dryRun: z.boolean().optional(),
});

export const AckParamsSchema = z.strictObject({
  planId: nonEmpty,
  applied: z.boolean(),
  /** The edits applied, when only some were; omitted with `applied:true` means all. */
  editIds: z.array(nonEmpty).optional(),
  /** Why edits were not applied (logged, and kept with the plan). */
  reason: z.string().optional(),
});

export const RecallParamsSchema = z.strictObject({ sessionId: nonEmpty, handle: nonEmpty });

export const SESSION_OUTCOMES = ['success', 'failure', 'unknown'] as const;
export type SessionOutcome = (typeof SESSION_OUTCOMES)[number];

export const EndParamsSchema = z.strictObject({ sessionId: nonEmpty, outcome: z.enum(SESSION_OUTCOMES) });

export const BootstrapParamsSchema = z.strictObject({
  task: nonEmpty,
  repo: z.string().optional(),
  budgetTokens: z.number().int().positive().default(2000),
});

export const StatusParamsSchema = z.strictObject({});

/** Most messages one `session.sync` may carry. */
export const MAX_SYNC_MESSAGES = 100_000;

/**
 * `session.sync`: an agent that builds its own requests (hermes' context engine) hands over the
 * message list it is about to send, in OpenAI chat form; plans for the session then index into
 * that list. Entries are loose (`role`, `content`, `tool_calls`, `tool_call_id`, `name`, plus
 * `isSummary: true` for a summary the agent put in from an earlier plan).
 */
export const SyncParamsSchema = z.strictObject({
  sessionId: nonEmpty,
  messages: z.array(z.looseObject({ role: z.string().min(1) })).max(MAX_SYNC_MESSAGES),
  /** The model's context window for this session (default: the daemon's budget or a preset). */
  budgetTokens: z.number().int().positive().optional(),
});

/** Most hits one `archive.search` may ask for. */
export const MAX_SEARCH_LIMIT = 50;

export const SearchParamsSchema = z.strictObject({
  /** Free text; punctuation is ignored, words are matched (any of them, best BM25 first). */
  query: z.string().min(1).max(4000),
  /** Search only this session's archive. */
  sessionId: nonEmpty.optional(),
  limit: z.number().int().min(1).max(MAX_SEARCH_LIMIT).default(5),
});

/** The params schema of every method, by wire name. */
export const PARAMS_SCHEMAS = {
  [METHODS.initialize]: InitializeParamsSchema,
  [METHODS.subscribe]: SubscribeParamsSchema,
  [METHODS.headroom]: SessionParamsSchema,
  [METHODS.sections]: SessionParamsSchema,
  [METHODS.compact]: CompactParamsSchema,
  [METHODS.ack]: AckParamsSchema,
  [METHODS.recall]: RecallParamsSchema,
  [METHODS.endSession]: EndParamsSchema,
  [METHODS.bootstrap]: BootstrapParamsSchema,
  [METHODS.status]: StatusParamsSchema,
  [METHODS.search]: SearchParamsSchema,
  [METHODS.sync]: SyncParamsSchema,
} as const satisfies Record<MethodName, z.ZodType>;

/** Params as a handler receives them (defaults applied). */
export type ParamsOf<M extends MethodName> = z.output<(typeof PARAMS_SCHEMAS)[M]>;
/** Params as a client sends them (defaulted fields optional). */
export type ParamsInput<M extends MethodName> = z.input<(typeof PARAMS_SCHEMAS)[M]>;

export type InitializeParams = ParamsOf<'initialize'>;
export type SubscribeParams = ParamsOf<'session.subscribe'>;
export type SessionParams = ParamsOf<'session.headroom'>;
export type CompactParams = ParamsOf<'session.compact'>;
export type AckParams = ParamsOf<'compaction.ack'>;
export type RecallParams = ParamsOf<'section.recall'>;
export type EndParams = ParamsOf<'session.end'>;
export type BootstrapParams = ParamsOf<'warm.bootstrap'>;
export type BootstrapParamsInput = ParamsInput<'warm.bootstrap'>;
export type SearchParams = ParamsOf<'archive.search'>;
export type SyncParams = ParamsOf<'session.sync'>;

/** True when `method` is one of the protocol's request methods. */
export function isMethodName(method: string): method is MethodName {
  return Object.prototype.hasOwnProperty.call(PARAMS_SCHEMAS, method);
}


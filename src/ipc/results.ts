/**
 * Shapes of results and daemon notifications (design §6). These are ipc's own wire schemas:
 * the socket contract is written here, not borrowed from the model's internal types, so
 * the model can change its data without silently changing what peers receive. Schemas are
 * loose (extra fields allowed) so the daemon can grow them without breaking clients; the
 * client does not enforce them at runtime, they document the contract and back the golden
 * wire tests. Each type is the schema's named fields, read-only, without the open index.
 */
import { z } from 'zod';
import type { MethodName, NotificationName } from './protocol.js';

/** A parsed wire shape as a plain read-only type: the fields its schema names, minus the loose index signature. */
export type Wire<T> = T extends readonly (infer U)[]
  ? readonly Wire<U>[]
  : T extends object
    ? { readonly [K in keyof T as string extends K ? never : K]: Wire<T[K]> }
    : T;

const MessageRangeSchema = z.looseObject({ start: z.number().int().min(0), end: z.number().int().min(0) });

export const InitializeResultSchema = z.looseObject({
  server: z.looseObject({ name: z.string(), version: z.string() }),
  protocolVersion: z.number().int(),
});
export type InitializeResult = z.infer<typeof InitializeResultSchema>;

export const HeadroomResultSchema = z.looseObject({
  /** Tokens counted against the budget (calibrated to the agent's own reports once it has sent some). */
  tokens: z.number(),
  /** contextd's own tiktoken count of the live messages. */
  countedTokens: z.number().optional(),
  total: z.number(),
  reserveRatio: z.number(),
  /** 1 − tokens/total. */
  headroom: z.number(),
  /** Number of sections in the live context. */
  sections: z.number().int(),
  /** Last token count the agent itself reported, if any. */
  reportedTokens: z.number().optional(),
  /**
   * The same agent session seen the other way: for a conversation through the proxy, the tailed
   * transcript's session; for a tailed session, its conversation through the proxy. Null when none.
   */
  linkedSession: z.string().nullable().optional(),
});
/** `session.headroom` result. */
export type HeadroomResult = Wire<z.infer<typeof HeadroomResultSchema>>;

export const SubscribeResultSchema = z.looseObject({ sessionId: z.string(), headroom: HeadroomResultSchema });
export type SubscribeResult = Wire<z.infer<typeof SubscribeResultSchema>>;

const ScoreFactorsWireSchema = z.looseObject({
  priorityWeight: z.number(),
  relevance: z.number(),
  recencyWeight: z.number(),
  density: z.number(),
  score: z.number(),
});

/** One section of the model (design §4) as sent over the socket. */
export const SectionWireSchema = z.looseObject({
  id: z.string(),
  sessionId: z.string(),
  messageRange: MessageRangeSchema,
  messageIds: z.array(z.string()).optional(),
  /** system | user-instruction | user-message | assistant-text | reasoning | tool-call | tool-output | error-trace | summary */
  kind: z.string(),
  /** critical | high | medium | low */
  priority: z.string(),
  relevance: z.number().optional(),
  recency: z
    .looseObject({
      turn: z.number(),
      ageTurns: z.number(),
      timestamp: z.number().optional(),
      ageSeconds: z.number().optional(),
      weight: z.number(),
    })
    .optional(),
  density: z.number().optional(),
  tokens: z.number(),
  anchor: z.boolean(),
  score: z.number(),
  factors: ScoreFactorsWireSchema.optional(),
  toolName: z.string().optional(),
  pending: z.boolean().optional(),
  compacted: z.boolean().optional(),
});
export type SectionWire = Wire<z.infer<typeof SectionWireSchema>>;
export const SectionsResultSchema = z.array(SectionWireSchema);
/** `session.sections` result. */
export type SectionsResult = readonly SectionWire[];

/** One edit of a compaction plan (design §5). */
export const WireEditSchema = z.looseObject({
  editId: z.string(),
  /** Section ids this edit replaces. */
  replaces: z.array(z.string()),
  /** Inclusive range of message indexes in the live message list that the summary replaces. */
  messageRange: MessageRangeSchema,
  /** The message to put in place of the range; its content quotes the recall handle. */
  summary: z.looseObject({ role: z.string(), content: z.string() }),
  tokensBefore: z.number(),
  tokensAfter: z.number(),
  reason: z.string(),
  /** Handle under which the originals are archived (for `section.recall`). */
  handle: z.string().optional(),
  scores: z.unknown().optional(),
});
export type WireEdit = z.infer<typeof WireEditSchema>;

/** A compaction plan: `session.compact` result and `compaction.proposed` params. */
export const WirePlanSchema = z.looseObject({
  planId: z.string(),
  sessionId: z.string(),
  edits: z.array(WireEditSchema),
  headroomBefore: z.number(),
  headroomAfter: z.number(),
  /** True for a `dryRun` plan: nothing archived, nothing to ack. */
  dryRun: z.boolean().optional(),
});
export type WirePlan = z.infer<typeof WirePlanSchema>;

/** `compaction.ack` result; `headroom` is the session's headroom after the applied edits. */
export const AckResultSchema = z.looseObject({ ok: z.literal(true), headroom: z.number().optional() });
export type AckResult = z.infer<typeof AckResultSchema>;

/** One original transcript message as recalled from the archive (the normalized message's JSON). */
export const WireMessageSchema = z.looseObject({
  id: z.string(),
  /** system | user | assistant | tool */
  role: z.string(),
  text: z.string(),
  reasoning: z.string().optional(),
  toolCalls: z.array(z.looseObject({ id: z.string(), name: z.string(), arguments: z.string() })).optional(),
  toolCallId: z.string().optional(),
  toolName: z.string().optional(),
  isError: z.boolean().optional(),
  injected: z.boolean().optional(),
  isSummary: z.boolean().optional(),
  imageCount: z.number().optional(),
  timestamp: z.number().optional(),
  model: z.string().optional(),
});
export type WireMessage = Wire<z.infer<typeof WireMessageSchema>>;

export const RecallResultSchema = z.looseObject({
  handle: z.string(),
  sessionId: z.string(),
  /** Why the originals were compacted (the edit's reason). */
  reason: z.string().optional(),
  /** Ids of the sections the edit replaced. */
  sectionIds: z.array(z.string()).optional(),
  messages: z.array(WireMessageSchema),
  /** Secrets replaced by `[REDACTED:<rule>]` before the originals were archived, per rule. */
  redactions: z.array(z.looseObject({ rule: z.string(), count: z.number() })).optional(),
  /** Tokens the originals held. */
  tokens: z.number().optional(),
});
/** `section.recall` result: the archived original messages. */
export type RecallResult = Wire<z.infer<typeof RecallResultSchema>>;

export const EndResultSchema = z.looseObject({ harvested: z.number().int().min(0) });
export type EndResult = z.infer<typeof EndResultSchema>;

export const BootstrapResultSchema = z.looseObject({
  templateIds: z.array(z.string()),
  messages: z.array(z.looseObject({ role: z.string(), content: z.string() })),
  tokens: z.number(),
});
export type BootstrapResult = z.infer<typeof BootstrapResultSchema>;

export const SessionStatusSchema = z.looseObject({
  sessionId: z.string(),
  headroom: z.number(),
  tokens: z.number().optional(),
  total: z.number().optional(),
  /** The transcript file the session is read from. */
  file: z.string().optional(),
  format: z.string().optional(),
  /** 'transcript' (tailed) or 'proxy' (seen through the proxy). */
  source: z.string().optional(),
  /** The same agent session seen the other way (see HeadroomResultSchema.linkedSession). */
  linkedSession: z.string().nullable().optional(),
  /** False while the session's model is released from memory. */
  inMemory: z.boolean().optional(),
  /** Fed over the socket (session.sync). */
  fed: z.boolean().optional(),
});
/** `daemon.status` result: sessions with headroom, version, uptime (the daemon may add more). */
export const StatusResultSchema = z.looseObject({
  server: z.looseObject({ name: z.string(), version: z.string() }),
  uptimeSeconds: z.number(),
  sessions: z.array(SessionStatusSchema),
  /** Memory, backlog and event-loop delay (daemon LoadStatus; absent from older daemons). */
  load: z
    .looseObject({
      rssBytes: z.number(),
      heapUsedBytes: z.number(),
      externalBytes: z.number(),
      arrayBuffersBytes: z.number(),
      queuedBytes: z.number(),
      queuedSessions: z.number(),
      sessionsInMemory: z.number(),
      /** Sessions fed over the socket in memory (absent from older daemons). */
      fedSessionsInMemory: z.number().optional(),
      plansInFlight: z.number(),
      eventLoopDelayMs: z.looseObject({ p50: z.number(), p99: z.number(), max: z.number() }),
    })
    .optional(),
});
export type StatusResult = z.infer<typeof StatusResultSchema>;

export const SearchHitSchema = z.looseObject({
  handle: z.string(),
  sessionId: z.string(),
  /** Negated BM25: higher is a better match, comparable within one query only. */
  score: z.number(),
  /** Why the originals were compacted (the edit's reason). */
  reason: z.string().optional(),
  messages: z.array(WireMessageSchema),
});
/** One `archive.search` hit: an archive handle, its session, its score and the originals. */
export type SearchHit = Wire<z.infer<typeof SearchHitSchema>>;
export const SearchResultSchema = z.looseObject({ hits: z.array(SearchHitSchema) });
/** `archive.search` result, best hit first. */
export type SearchResult = Wire<z.infer<typeof SearchResultSchema>>;

export const SyncResultSchema = z.looseObject({
  sessionId: z.string(),
  headroom: HeadroomResultSchema,
  zone: z.enum(['ok', 'soft', 'reserve']),
  watermarks: z.looseObject({ reserveRatio: z.number(), softWatermark: z.number(), hysteresis: z.number() }),
  rebuilt: z.boolean(),
  messages: z.number().int().min(0),
});
/** `session.sync` result: the session's headroom and zone after taking the list in (`rebuilt`: the list did not share a prefix with the last one, so the model was rebuilt from it). */
export type SyncResult = Wire<z.infer<typeof SyncResultSchema>>;

/** Headroom zones named in `session.headroom` notifications. */
export const HEADROOM_ZONES = ['ok', 'soft', 'reserve'] as const;
export type HeadroomZone = (typeof HEADROOM_ZONES)[number];

/** `session.headroom` notification params: a snapshot pushed when a watermark is crossed. */
export const HeadroomNotificationSchema = HeadroomResultSchema.extend({
  sessionId: z.string(),
  /** The zone the headroom is in now: `ok`, past the `soft` watermark, or inside the `reserve`. */
  zone: z.enum(HEADROOM_ZONES).optional(),
  previousZone: z.enum(HEADROOM_ZONES).nullable().optional(),
});
export type HeadroomNotification = z.infer<typeof HeadroomNotificationSchema>;

/** Result schema by method (loose; for tests and optional checking). */
export const RESULT_SCHEMAS = {
  initialize: InitializeResultSchema,
  'session.subscribe': SubscribeResultSchema,
  'session.headroom': HeadroomResultSchema,
  'session.sections': SectionsResultSchema,
  'session.compact': WirePlanSchema,
  'compaction.ack': AckResultSchema,
  'section.recall': RecallResultSchema,
  'session.end': EndResultSchema,
  'warm.bootstrap': BootstrapResultSchema,
  'daemon.status': StatusResultSchema,
  'archive.search': SearchResultSchema,
  'session.sync': SyncResultSchema,
} as const satisfies Record<MethodName, z.ZodType>;

/** Notification params schema by name. */
export const NOTIFICATION_SCHEMAS = {
  'compaction.proposed': WirePlanSchema,
  'session.headroom': HeadroomNotificationSchema,
} as const satisfies Record<NotificationName, z.ZodType>;

/** The result type of each method. */
export interface ResultMap {
  initialize: InitializeResult;
  'session.subscribe': SubscribeResult;
  'session.headroom': HeadroomResult;
  'session.sections': SectionsResult;
  'session.compact': WirePlan;
  'compaction.ack': AckResult;
  'section.recall': RecallResult;
  'session.end': EndResult;
  'warm.bootstrap': BootstrapResult;
  'daemon.status': StatusResult;
  'archive.search': SearchResult;
  'session.sync': SyncResult;
}
export type ResultOf<M extends MethodName> = ResultMap[M];

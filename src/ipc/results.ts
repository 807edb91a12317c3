/**
 * Shapes of results and daemon notifications (design §6). These schemas are loose (extra
 * fields allowed) so the daemon can grow them without breaking clients; the client does not
 * enforce them at runtime, they document the contract and back the golden wire tests.
 */
import { z } from 'zod';
import type { Message } from '../ingest/types.js';
import type { HeadroomSnapshot, Section } from '../model/types.js';
import type { MethodName, NotificationName } from './protocol.js';

const MessageRangeSchema = z.looseObject({ start: z.number().int().min(0), end: z.number().int().min(0) });

export const InitializeResultSchema = z.looseObject({
  server: z.looseObject({ name: z.string(), version: z.string() }),
  protocolVersion: z.number().int(),
});
export type InitializeResult = z.infer<typeof InitializeResultSchema>;

export const HeadroomResultSchema = z.looseObject({
  tokens: z.number(),
  total: z.number(),
  reserveRatio: z.number(),
  headroom: z.number(),
  sections: z.number().int(),
});
/** `session.headroom` result: the model's HeadroomSnapshot. */
export type HeadroomResult = HeadroomSnapshot;

export const SubscribeResultSchema = z.looseObject({ sessionId: z.string(), headroom: HeadroomResultSchema });
export interface SubscribeResult {
  readonly sessionId: string;
  readonly headroom: HeadroomResult;
}

export const SectionWireSchema = z.looseObject({
  id: z.string(),
  sessionId: z.string(),
  messageRange: MessageRangeSchema,
  kind: z.string(),
  priority: z.string(),
  tokens: z.number(),
  anchor: z.boolean(),
  score: z.number(),
});
export const SectionsResultSchema = z.array(SectionWireSchema);
/** `session.sections` result. */
export type SectionsResult = readonly Section[];

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

export const RecallResultSchema = z.looseObject({
  handle: z.string(),
  sessionId: z.string(),
  messages: z.array(z.looseObject({ id: z.string(), role: z.string(), text: z.string() })),
});
/** `section.recall` result: the archived original messages. */
export interface RecallResult {
  readonly handle: string;
  readonly sessionId: string;
  readonly messages: readonly Message[];
  /** Secrets replaced by `[REDACTED:<rule>]` before the originals were archived, per rule. */
  readonly redactions?: readonly { readonly rule: string; readonly count: number }[];
  readonly [extra: string]: unknown;
}

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
});
/** `daemon.status` result: sessions with headroom, version, uptime (the daemon may add more). */
export const StatusResultSchema = z.looseObject({
  server: z.looseObject({ name: z.string(), version: z.string() }),
  uptimeSeconds: z.number(),
  sessions: z.array(SessionStatusSchema),
});
export type StatusResult = z.infer<typeof StatusResultSchema>;

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
}
export type ResultOf<M extends MethodName> = ResultMap[M];

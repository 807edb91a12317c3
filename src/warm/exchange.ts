/**
 * Export and import of warm templates as one JSON document with a schema version.
 * Import validates every record with zod and reports bad ones without stopping; imported
 * text goes through the injected redactor before it is stored (an export may come from
 * someone else's machine).
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import {
  ITEM_KINDS,
  KNOWLEDGE_CATEGORIES,
  OUTCOMES,
  TEMPLATE_SCHEMA_VERSION,
  USER_PATTERN_KINDS,
  allPatterns,
  importPattern,
  type TemplateStore,
} from '../store/templates.js';
import { TASK_TYPES } from '../text/index.js';
import { ContextdError, ErrorCode, describeError } from '../util/errors.js';
import { writeFileAtomic } from '../util/atomic-write.js';

export const EXPORT_FORMAT = 'contextd-warm-templates';

const itemSchema = z.object({
  kind: z.enum(ITEM_KINDS),
  category: z.string().max(200).default(''),
  text: z.string().min(1).max(20_000),
  data: z.unknown().optional(),
  evidence: z.number().int().min(1).max(1_000_000),
  updatedAt: z.number().int().nonnegative(),
});

const knowledgeSchema = z.object({
  category: z.enum(KNOWLEDGE_CATEGORIES),
  text: z.string().min(1).max(20_000),
  evidence: z.number().int().min(1).max(1_000_000),
  updatedAt: z.number().int().nonnegative(),
});

export const templateRecordSchema = z.object({
  id: z.string().regex(/^t-[0-9a-z-]{4,64}$/),
  schemaVersion: z.number().int().min(1).max(TEMPLATE_SCHEMA_VERSION),
  name: z.string().max(500),
  taskType: z.enum(TASK_TYPES),
  repo: z.string().max(500),
  task: z.string().max(20_000),
  systemDigest: z.string().max(20_000),
  fingerprint: z.string().regex(/^[0-9a-f]{16}$/),
  valueScore: z.number().min(0).max(10),
  valueBreakdown: z.record(z.string(), z.number()),
  sessionCount: z.number().int().nonnegative(),
  usageCount: z.number().int().nonnegative(),
  successCount: z.number().int().nonnegative(),
  failureCount: z.number().int().nonnegative(),
  createdAt: z.number().int().nonnegative(),
  updatedAt: z.number().int().nonnegative(),
  sessions: z.array(
    z.object({ sessionId: z.string().min(1).max(500), source: z.string().max(4096), outcome: z.enum(OUTCOMES), valueScore: z.number(), harvestedAt: z.number().int() }),
  ),
  items: z.array(itemSchema),
  knowledge: z.array(knowledgeSchema),
});
export type TemplateRecord = z.infer<typeof templateRecordSchema>;

export const patternRecordSchema = z.object({
  kind: z.enum(USER_PATTERN_KINDS),
  text: z.string().min(1).max(2000),
  repo: z.string().max(500),
  sessionCount: z.number().int().min(1),
  sessions: z.array(z.string().max(500)),
  firstSeen: z.number().int().nonnegative(),
  lastSeen: z.number().int().nonnegative(),
});

const envelopeSchema = z.object({
  format: z.literal(EXPORT_FORMAT),
  schemaVersion: z.number().int().min(1).max(TEMPLATE_SCHEMA_VERSION),
  exportedAt: z.string(),
  templates: z.array(z.unknown()),
  patterns: z.array(z.unknown()).default([]),
});

/** Redacts a batch of texts (harvest's `redactAll` in production). */
export type TextRedactor = (texts: readonly string[]) => Promise<{ texts: string[] }>;

/** Everything in the store as an export document. */
export function exportDocument(store: TemplateStore): { format: string; schemaVersion: number; exportedAt: string; templates: TemplateRecord[]; patterns: z.infer<typeof patternRecordSchema>[] } {
  const templates = store.list().map((s) => {
    const t = store.get(s.id);
    if (!t) throw new ContextdError(ErrorCode.STORE_FAILED, `template ${s.id} vanished during export`);
    return {
      id: t.id,
      schemaVersion: t.schemaVersion,
      name: t.name,
      taskType: t.taskType,
      repo: t.repo,
      task: t.task,
      systemDigest: t.systemDigest,
      fingerprint: t.fingerprint,
      valueScore: t.valueScore,
      valueBreakdown: { ...t.valueBreakdown },
      sessionCount: t.sessionCount,
      usageCount: t.usageCount,
      successCount: t.successCount,
      failureCount: t.failureCount,
      createdAt: t.createdAt,
      updatedAt: t.updatedAt,
      sessions: t.sessions.map((x) => ({ ...x })),
      items: t.items.map((i) => ({ kind: i.kind, category: i.category, text: i.text, ...(i.data !== undefined ? { data: i.data } : {}), evidence: i.evidence, updatedAt: i.updatedAt })),
      knowledge: t.knowledge.map((k) => ({ category: k.category, text: k.text, evidence: k.evidence, updatedAt: k.updatedAt })),
    };
  });
  const patterns = allPatterns(store.db).map((p) => ({ kind: p.kind, text: p.text, repo: p.repo, sessionCount: p.sessionCount, sessions: [...p.sessions], firstSeen: p.firstSeen, lastSeen: p.lastSeen }));
  return { format: EXPORT_FORMAT, schemaVersion: TEMPLATE_SCHEMA_VERSION, exportedAt: new Date().toISOString(), templates, patterns };
}

/**
 * Write the export document to `file` atomically, mode 0600 even over an existing file. The
 * temp file beside it is created exclusively under an unguessable name: in a shared folder a
 * planted symlink cannot turn the export into a write to someone else's file. Returns the counts.
 */
export async function exportTemplates(store: TemplateStore, file: string): Promise<{ templates: number; patterns: number }> {
  const doc = exportDocument(store);
  await writeFileAtomic(file, `${JSON.stringify(doc, null, 2)}\n`, 0o600);
  return { templates: doc.templates.length, patterns: doc.patterns.length };
}

export interface ImportReport {
  readonly templates: { readonly created: number; readonly merged: number };
  readonly patterns: number;
  readonly bad: { index: number; kind: 'template' | 'pattern'; error: string }[];
}

function issues(err: z.ZodError): string {
  return err.issues.slice(0, 5).map((i) => `${i.path.join('.') || '(record)'}: ${i.message}`).join('; ');
}

function collect(value: unknown, out: string[], skip: ReadonlySet<string>, key?: string): void {
  if (typeof value === 'string') {
    if (key === undefined || !skip.has(key)) out.push(value);
  } else if (Array.isArray(value)) for (const v of value) collect(v, out, skip);
  else if (typeof value === 'object' && value !== null) for (const [k, v] of Object.entries(value)) collect(v, out, skip, k);
}

function replace(value: unknown, next: () => string, skip: ReadonlySet<string>, key?: string): unknown {
  if (typeof value === 'string') return key === undefined || !skip.has(key) ? next() : value;
  if (Array.isArray(value)) return value.map((v) => replace(v, next, skip));
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replace(v, next, skip, k)]));
  return value;
}

const KEEP = new Set(['id', 'fingerprint', 'taskType', 'kind', 'category', 'outcome', 'sessionId', 'format', 'exportedAt']);

async function redactRecord<T>(record: T, redactor: TextRedactor): Promise<T> {
  const texts: string[] = [];
  collect(record, texts, KEEP);
  const { texts: clean } = await redactor(texts);
  let i = 0;
  return replace(record, () => clean[i++] ?? '', KEEP) as T;
}

/** Import an export document; bad records are reported, good ones stored. */
export async function importTemplates(store: TemplateStore, file: string, redactor: TextRedactor): Promise<ImportReport> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8')) as unknown;
  } catch (err) {
    throw new ContextdError(ErrorCode.USAGE, `cannot read template export ${file}: ${describeError(err)}`, { file });
  }
  const env = envelopeSchema.safeParse(raw);
  if (!env.success) throw new ContextdError(ErrorCode.USAGE, `${file} is not a contextd template export: ${issues(env.error)}`, { file });
  const bad: ImportReport['bad'] = [];
  let created = 0;
  let merged = 0;
  for (const [index, rec] of env.data.templates.entries()) {
    const parsed = templateRecordSchema.safeParse(rec);
    if (!parsed.success) {
      bad.push({ index, kind: 'template', error: issues(parsed.error) });
      continue;
    }
    const t = await redactRecord(parsed.data, redactor);
    const r = store.importTemplate({ ...t, items: t.items.map((i) => ({ ...i, category: i.category })), knowledge: t.knowledge });
    if (r.created) created++;
    else merged++;
  }
  let patterns = 0;
  for (const [index, rec] of env.data.patterns.entries()) {
    const parsed = patternRecordSchema.safeParse(rec);
    if (!parsed.success) {
      bad.push({ index, kind: 'pattern', error: issues(parsed.error) });
      continue;
    }
    const p = await redactRecord(parsed.data, redactor);
    store.db.transaction(() => importPattern(store.db, p))();
    patterns++;
  }
  return { templates: { created, merged }, patterns, bad };
}

/**
 * Warm-start templates harvested from finished sessions, and their items.
 *
 * A template is one kind of task in one repo: near-identical sessions (same repo and task
 * type, simhash fingerprints within a few bits) merge into one template, and items with the
 * same normalized text merge into one row whose `evidence` counts sessions. Confidence is
 * derived from evidence and decays with age on read; `decay(now)` deletes what fell below a
 * floor. Every write is one synchronous transaction. Text search uses SQLite FTS5 (BM25).
 */
import type { Db } from './db.js';
import { wrapStoreError } from './db.js';
import type { TaskType } from '../text/index.js';
import { matchAny } from './fts.js';
import {
  DEFAULT_HALF_LIFE_MS,
  itemConfidence,
  knowledgeFromRow,
  normalizedHash,
  promotedPatterns,
  allPatterns,
  upsertKnowledge,
  upsertUserPattern,
  type KnowledgeInput,
  type KnowledgeItem,
  type UserPattern,
  type UserPatternInput,
} from './knowledge.js';
import { sha1Hex } from '../util/sha1.js';

/** Version of the template record shape (stored per row and in exports). */
export const TEMPLATE_SCHEMA_VERSION = 1;

export const ITEM_KINDS = ['example', 'recovery', 'marker'] as const;
export type ItemKind = (typeof ITEM_KINDS)[number];

export const OUTCOMES = ['success', 'failure', 'unknown'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export interface ValueScore {
  readonly score: number;
  readonly breakdown: Readonly<Record<string, number>>;
}

export interface TemplateItemInput {
  readonly kind: ItemKind;
  /** Marker kind (path|url|repo|command) or tool name; '' when none. */
  readonly category?: string;
  readonly text: string;
  readonly data?: unknown;
}

/** Everything one harvested session contributes. All text must already be redacted. */
export interface TemplateInput {
  readonly sessionId: string;
  readonly source?: string;
  readonly outcome: Outcome;
  readonly name: string;
  readonly taskType: TaskType;
  readonly repo: string;
  readonly task: string;
  readonly systemDigest: string;
  /** 16 hex chars (64-bit simhash). */
  readonly fingerprint: string;
  readonly value: ValueScore;
  readonly items: readonly TemplateItemInput[];
  readonly knowledge: readonly KnowledgeInput[];
  readonly patterns: readonly UserPatternInput[];
  readonly messageCount: number;
  /** Hash of the transcript's content (see harvest/content-hash.ts); '' or absent when unknown. */
  readonly contentHash?: string;
  readonly at: number;
}

/** What the store remembers of one harvested (or skipped) session. */
export interface HarvestedSession {
  readonly sessionId: string;
  readonly messageCount: number;
  readonly templateId: string | null;
  readonly skipped: string | null;
  readonly contentHash: string | null;
}

interface HarvestedRow {
  session_id: string;
  message_count: number;
  template_id: string | null;
  skipped: string | null;
  content_hash: string | null;
}

function harvestedFromRow(r: HarvestedRow): HarvestedSession {
  return { sessionId: r.session_id, messageCount: r.message_count, templateId: r.template_id, skipped: r.skipped, contentHash: r.content_hash };
}

/** Content hashes looked up per statement (SQLite's default limit on bound parameters is 32766). */
const HASHES_PER_QUERY = 500;

export interface TemplateSummary {
  readonly id: string;
  readonly name: string;
  readonly taskType: TaskType;
  readonly repo: string;
  readonly task: string;
  readonly valueScore: number;
  readonly sessionCount: number;
  readonly usageCount: number;
  readonly successCount: number;
  readonly failureCount: number;
  /** Laplace-smoothed: (success + 1) / (usage + 2). */
  readonly successRate: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface TemplateItem {
  readonly id: number;
  readonly kind: ItemKind;
  readonly category: string;
  readonly text: string;
  readonly data?: unknown;
  readonly evidence: number;
  readonly confidence: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface TemplateSession {
  readonly sessionId: string;
  readonly source: string;
  readonly outcome: Outcome;
  readonly valueScore: number;
  readonly harvestedAt: number;
}

export interface Template extends TemplateSummary {
  readonly schemaVersion: number;
  readonly systemDigest: string;
  readonly fingerprint: string;
  readonly valueBreakdown: Readonly<Record<string, number>>;
  readonly sessions: readonly TemplateSession[];
  readonly items: readonly TemplateItem[];
  readonly knowledge: readonly KnowledgeItem[];
}

export interface TemplateStoreOptions {
  /** Max simhash distance (bits of 64) for two sessions to share a template (default 3). */
  readonly mergeDistance?: number;
  readonly halfLifeMs?: number;
}

interface TemplateRow {
  template_id: string;
  schema_version: number;
  name: string;
  task_type: string;
  repo: string;
  task: string;
  system_digest: string;
  fingerprint: string;
  value_score: number;
  value_breakdown: string;
  session_count: number;
  usage_count: number;
  success_count: number;
  failure_count: number;
  created_at: number;
  updated_at: number;
}

interface ItemRow {
  item_id: number;
  kind: string;
  category: string;
  text: string;
  data: string | null;
  evidence: number;
  created_at: number;
  updated_at: number;
}

/** Bits that differ between two 16-hex-char fingerprints. */
export function hammingDistance(a: string, b: string): number {
  let d = 0;
  for (let i = 0; i < 16; i += 8) {
    let x = (parseInt(a.slice(i, i + 8), 16) ^ parseInt(b.slice(i, i + 8), 16)) >>> 0;
    while (x) {
      x &= x - 1;
      d++;
    }
  }
  return d;
}

function summaryFromRow(r: TemplateRow): TemplateSummary {
  return {
    id: r.template_id,
    name: r.name,
    taskType: r.task_type as TaskType,
    repo: r.repo,
    task: r.task,
    valueScore: r.value_score,
    sessionCount: r.session_count,
    usageCount: r.usage_count,
    successCount: r.success_count,
    failureCount: r.failure_count,
    successRate: (r.success_count + 1) / (r.usage_count + 2),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

const FTS_BODY_CHARS = 16_000;

/** SQLite-backed template store. */
export class TemplateStore {
  readonly db: Db;
  private readonly mergeDistance: number;
  private readonly halfLifeMs: number;

  constructor(db: Db, options: TemplateStoreOptions = {}) {
    this.db = db;
    this.mergeDistance = options.mergeDistance ?? 3;
    this.halfLifeMs = options.halfLifeMs ?? DEFAULT_HALF_LIFE_MS;
  }

  /** What was recorded when `sessionId` was last harvested (or skipped), if ever. */
  harvestedSession(sessionId: string): HarvestedSession | undefined {
    const r = this.db.prepare(`SELECT session_id, message_count, template_id, skipped, content_hash FROM harvested_sessions WHERE session_id = ?`).get(sessionId) as
      | HarvestedRow
      | undefined;
    return r && harvestedFromRow(r);
  }

  /**
   * The harvested session whose content hash is one of `hashes` (a transcript's prefix hash
   * chain), the one with the most messages when several are: the same content, or an earlier
   * state of a transcript that grew since. Rows skipped as empty are left out: their content
   * is boilerplate at most (a system prompt), which another session may start with too, so it
   * identifies no session.
   */
  harvestedByContent(hashes: readonly string[]): HarvestedSession | undefined {
    let best: HarvestedRow | undefined;
    for (let i = 0; i < hashes.length; i += HASHES_PER_QUERY) {
      const chunk = hashes.slice(i, i + HASHES_PER_QUERY);
      const r = this.db
        .prepare(
          `SELECT session_id, message_count, template_id, skipped, content_hash FROM harvested_sessions
           WHERE content_hash IN (${chunk.map(() => '?').join(',')}) AND skipped IS NOT 'empty' ORDER BY message_count DESC LIMIT 1`,
        )
        .get(...chunk) as HarvestedRow | undefined;
      if (r && (!best || r.message_count > best.message_count)) best = r;
    }
    return best && harvestedFromRow(best);
  }

  /**
   * Remember a session that was looked at but not harvested (so it is not re-scored). A
   * session harvested before (a transcript that grew, and whose new state is skipped) keeps
   * its template link: that template still holds its earlier contribution, and a later
   * harvest of it must replace that contribution rather than count in a second template.
   */
  recordSkipped(sessionId: string, messageCount: number, score: number, reason: string, at: number, contentHash = ''): void {
    this.run('record skipped session', () =>
      this.db
        .prepare(
          `INSERT INTO harvested_sessions (session_id, template_id, message_count, value_score, skipped, harvested_at, content_hash) VALUES (?, NULL, ?, ?, ?, ?, ?)
           ON CONFLICT(session_id) DO UPDATE SET message_count = excluded.message_count, value_score = excluded.value_score, skipped = excluded.skipped,
             harvested_at = excluded.harvested_at, content_hash = excluded.content_hash`,
        )
        .run(sessionId, messageCount, score, reason, at, contentHash || null),
    );
  }

  /** Templates in a repo, and the template nearest to `fingerprint` among them (for novelty). */
  repoStats(repo: string): { templates: number } {
    const r = this.db.prepare(`SELECT COUNT(*) AS n FROM templates WHERE repo = ?`).get(repo) as { n: number };
    return { templates: r.n };
  }

  /** The existing template a new session with this fingerprint would merge into, if any. */
  findNearIdentical(repo: string, taskType: TaskType, fingerprint: string): string | undefined {
    const rows = this.db
      .prepare(`SELECT template_id, fingerprint FROM templates WHERE repo = ? AND task_type = ? ORDER BY updated_at DESC LIMIT 2000`)
      .all(repo, taskType) as { template_id: string; fingerprint: string }[];
    let best: { id: string; d: number } | undefined;
    for (const r of rows) {
      const d = hammingDistance(r.fingerprint, fingerprint);
      if (d <= this.mergeDistance && (!best || d < best.d)) best = { id: r.template_id, d };
    }
    return best?.id;
  }

  /**
   * Store one harvested session: merge into a near-identical template or create one, upsert
   * its items, knowledge and user patterns, refresh the search index. One transaction.
   */
  save(input: TemplateInput): { templateId: string; merged: boolean; promotedPatterns: number } {
    return this.run('save template', () =>
      this.db.transaction(() => {
        // A session harvested before (a transcript that grew) stays in its template: its new
        // harvest replaces its contribution there rather than counting in a second template.
        const earlier = this.db
          .prepare(`SELECT h.template_id AS id FROM harvested_sessions h JOIN templates t ON t.template_id = h.template_id WHERE h.session_id = ?`)
          .get(input.sessionId) as { id: string } | undefined;
        const target = earlier?.id ?? this.findNearIdentical(input.repo, input.taskType, input.fingerprint);
        let templateId: string;
        if (target) {
          templateId = target;
          const isNew = !this.db.prepare(`SELECT 1 FROM template_sessions WHERE template_id = ? AND session_id = ?`).get(templateId, input.sessionId);
          this.db
            .prepare(
              `UPDATE templates SET session_count = session_count + ?,
                 value_breakdown = CASE WHEN ? > value_score THEN ? ELSE value_breakdown END,
                 value_score = MAX(value_score, ?),
                 system_digest = CASE WHEN system_digest = '' THEN ? ELSE system_digest END,
                 updated_at = MAX(updated_at, ?)
               WHERE template_id = ?`,
            )
            .run(isNew ? 1 : 0, input.value.score, JSON.stringify(input.value.breakdown), input.value.score, input.systemDigest, input.at, templateId);
        } else {
          templateId = `t-${sha1Hex(`${input.sessionId}\0${input.fingerprint}`).slice(0, 12)}`;
          this.db
            .prepare(
              `INSERT INTO templates (template_id, schema_version, name, task_type, repo, task, system_digest, fingerprint, value_score, value_breakdown,
                 session_count, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)`,
            )
            .run(templateId, TEMPLATE_SCHEMA_VERSION, input.name, input.taskType, input.repo, input.task, input.systemDigest, input.fingerprint,
              input.value.score, JSON.stringify(input.value.breakdown), input.at, input.at);
        }
        this.db
          .prepare(`INSERT OR REPLACE INTO template_sessions (template_id, session_id, source, outcome, value_score, harvested_at) VALUES (?, ?, ?, ?, ?, ?)`)
          .run(templateId, input.sessionId, input.source ?? '', input.outcome, input.value.score, input.at);
        for (const item of input.items) this.upsertItem(templateId, item, input.sessionId, input.at, 1);
        for (const k of input.knowledge) {
          const kid = upsertKnowledge(this.db, input.repo, k, input.sessionId, input.at);
          this.db.prepare(`INSERT OR IGNORE INTO template_knowledge (template_id, knowledge_id) VALUES (?, ?)`).run(templateId, kid);
        }
        let promoted = 0;
        for (const p of input.patterns) if (upsertUserPattern(this.db, input.repo, p, input.sessionId, input.at)) promoted++;
        this.reindex(templateId);
        this.db
          .prepare(
            `INSERT OR REPLACE INTO harvested_sessions (session_id, template_id, message_count, value_score, skipped, harvested_at, content_hash) VALUES (?, ?, ?, ?, NULL, ?, ?)`,
          )
          .run(input.sessionId, templateId, input.messageCount, input.value.score, input.at, input.contentHash || null);
        return { templateId, merged: target !== undefined, promotedPatterns: promoted };
      })(),
    );
  }

  /** Upsert one item; evidence grows once per distinct session; an import (no session) keeps the larger count. */
  private upsertItem(templateId: string, item: TemplateItemInput, sessionId: string | null, at: number, minEvidence: number): void {
    this.db
      .prepare(
        `INSERT INTO template_items (template_id, kind, category, text, data, norm_hash, evidence, last_session, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(template_id, kind, norm_hash) DO UPDATE SET
           evidence = CASE WHEN excluded.last_session IS NULL THEN MAX(evidence, excluded.evidence)
             ELSE MAX(excluded.evidence, evidence + (CASE WHEN last_session IS excluded.last_session THEN 0 ELSE 1 END)) END,
           last_session = COALESCE(excluded.last_session, last_session),
           updated_at = MAX(updated_at, excluded.updated_at)`,
      )
      .run(templateId, item.kind, item.category ?? '', item.text, item.data === undefined ? null : JSON.stringify(item.data),
        normalizedHash(`${item.category ?? ''}:${item.text}`), minEvidence, sessionId, at, at);
  }

  /** Rebuild the FTS row of a template from its task and item texts. */
  private reindex(templateId: string): void {
    const t = this.db.prepare(`SELECT rowid, name, task, repo FROM templates WHERE template_id = ?`).get(templateId) as
      | { rowid: number; name: string; task: string; repo: string }
      | undefined;
    if (!t) return;
    const items = this.db.prepare(`SELECT text FROM template_items WHERE template_id = ? ORDER BY evidence DESC, item_id LIMIT 400`).all(templateId) as { text: string }[];
    const knowledge = this.db
      .prepare(`SELECT k.text FROM knowledge k JOIN template_knowledge tk ON tk.knowledge_id = k.knowledge_id WHERE tk.template_id = ? LIMIT 100`)
      .all(templateId) as { text: string }[];
    const body = [t.name, t.task, t.task, t.repo, ...items.map((i) => i.text), ...knowledge.map((k) => k.text)].join('\n').slice(0, FTS_BODY_CHARS);
    this.db.prepare(`DELETE FROM templates_fts WHERE rowid = ?`).run(t.rowid);
    this.db.prepare(`INSERT INTO templates_fts (rowid, body) VALUES (?, ?)`).run(t.rowid, body);
  }

  /** BM25 matches for the given terms (any of them), best first; `rank` is positive, higher is better. */
  search(terms: readonly string[], limit = 50): { templateId: string; rank: number }[] {
    const query = matchAny(terms);
    if (query === undefined) return [];
    const rows = this.run('search templates', () =>
      this.db
        .prepare(
          `SELECT t.template_id AS id, bm25(templates_fts) AS score FROM templates_fts f JOIN templates t ON t.rowid = f.rowid
           WHERE templates_fts MATCH ? ORDER BY score LIMIT ?`,
        )
        .all(query, limit),
    ) as { id: string; score: number }[];
    return rows.map((r) => ({ templateId: r.id, rank: -r.score }));
  }

  /** Summaries of all templates, newest first (optionally one repo, one repo name, one task type). */
  list(filter: { repo?: string; repoName?: string; taskType?: TaskType; limit?: number } = {}): TemplateSummary[] {
    const where: string[] = [];
    const args: unknown[] = [];
    if (filter.repo !== undefined) {
      where.push('repo = ?');
      args.push(filter.repo);
    }
    if (filter.repoName !== undefined) {
      // By the repository's own name: `contextd` matches `acme/contextd` and `contextd`.
      where.push(`(repo = ? OR repo LIKE ? ESCAPE '\\')`);
      args.push(filter.repoName, `%/${filter.repoName.replace(/[\\%_]/g, (c) => `\\${c}`)}`);
    }
    if (filter.taskType !== undefined) {
      where.push('task_type = ?');
      args.push(filter.taskType);
    }
    const sql = `SELECT * FROM templates ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY updated_at DESC, template_id LIMIT ?`;
    return (this.db.prepare(sql).all(...args, filter.limit ?? -1) as TemplateRow[]).map(summaryFromRow);
  }

  /** Summaries for the given ids (unknown ids are left out). */
  summaries(ids: readonly string[]): TemplateSummary[] {
    const stmt = this.db.prepare(`SELECT * FROM templates WHERE template_id = ?`);
    const out: TemplateSummary[] = [];
    for (const id of ids) {
      const r = stmt.get(id) as TemplateRow | undefined;
      if (r) out.push(summaryFromRow(r));
    }
    return out;
  }

  count(): number {
    return (this.db.prepare(`SELECT COUNT(*) AS n FROM templates`).get() as { n: number }).n;
  }

  /** A whole template with items and knowledge, confidences decayed to `now`. */
  get(id: string, now: number = Date.now()): Template | undefined {
    const r = this.db.prepare(`SELECT * FROM templates WHERE template_id = ?`).get(id) as TemplateRow | undefined;
    if (!r) return undefined;
    const items = (this.db.prepare(`SELECT * FROM template_items WHERE template_id = ? ORDER BY kind, evidence DESC, item_id`).all(id) as ItemRow[]).map(
      (i): TemplateItem => ({
        id: i.item_id,
        kind: i.kind as ItemKind,
        category: i.category,
        text: i.text,
        ...(i.data !== null ? { data: JSON.parse(i.data) as unknown } : {}),
        evidence: i.evidence,
        confidence: itemConfidence(i.evidence, i.updated_at, now, this.halfLifeMs),
        createdAt: i.created_at,
        updatedAt: i.updated_at,
      }),
    );
    const sessions = (
      this.db.prepare(`SELECT * FROM template_sessions WHERE template_id = ? ORDER BY harvested_at, session_id`).all(id) as {
        session_id: string;
        source: string;
        outcome: string;
        value_score: number;
        harvested_at: number;
      }[]
    ).map((s) => ({ sessionId: s.session_id, source: s.source, outcome: s.outcome as Outcome, valueScore: s.value_score, harvestedAt: s.harvested_at }));
    return {
      ...summaryFromRow(r),
      schemaVersion: r.schema_version,
      systemDigest: r.system_digest,
      fingerprint: r.fingerprint,
      valueBreakdown: JSON.parse(r.value_breakdown) as Record<string, number>,
      sessions,
      items,
      knowledge: this.knowledgeFor([id], undefined, now),
    };
  }

  /** Knowledge linked to the templates, plus the repo's own when `repo` is given; most confident first. */
  knowledgeFor(templateIds: readonly string[], repo: string | undefined, now: number = Date.now()): KnowledgeItem[] {
    const byId = new Map<number, KnowledgeItem>();
    const linked = this.db.prepare(
      `SELECT k.* FROM knowledge k JOIN template_knowledge tk ON tk.knowledge_id = k.knowledge_id WHERE tk.template_id = ?`,
    );
    for (const id of templateIds) for (const row of linked.all(id) as Parameters<typeof knowledgeFromRow>[0][]) byId.set(row.knowledge_id, knowledgeFromRow(row, now, this.halfLifeMs));
    if (repo) {
      const own = this.db.prepare(`SELECT * FROM knowledge WHERE repo = ? ORDER BY evidence DESC, updated_at DESC LIMIT 100`).all(repo) as Parameters<typeof knowledgeFromRow>[0][];
      for (const row of own) byId.set(row.knowledge_id, knowledgeFromRow(row, now, this.halfLifeMs));
    }
    return [...byId.values()].sort((a, b) => b.confidence - a.confidence || b.evidence - a.evidence || a.id - b.id);
  }

  /** Promoted user patterns relevant to a repo. */
  patterns(repo?: string): UserPattern[] {
    return promotedPatterns(this.db, repo);
  }

  /** Every promoted user pattern, any repo, most frequent first (the warm snapshot filters per repo). */
  allPromotedPatterns(): UserPattern[] {
    return allPatterns(this.db)
      .filter((p) => p.promoted)
      .sort((a, b) => b.sessionCount - a.sessionCount || b.lastSeen - a.lastSeen);
  }

  /** Repositories that own knowledge items of their own (the warm snapshot copies each one's share). */
  knowledgeRepos(): string[] {
    return (this.db.prepare(`SELECT DISTINCT repo FROM knowledge WHERE repo != '' ORDER BY repo`).all() as { repo: string }[]).map((r) => r.repo);
  }

  /** The text a template is searched by (its FTS row), if it has one. */
  searchBody(id: string): string | undefined {
    const r = this.db.prepare(`SELECT f.body AS body FROM templates_fts f JOIN templates t ON t.rowid = f.rowid WHERE t.template_id = ?`).get(id) as
      | { body: string }
      | undefined;
    return r?.body;
  }

  /** Half-life (ms) with which item and knowledge confidences decay on read. */
  get confidenceHalfLifeMs(): number {
    return this.halfLifeMs;
  }

  /** Delete a template (its items, sessions and links go with it). Returns whether it existed. */
  delete(id: string): boolean {
    return this.run('delete template', () =>
      this.db.transaction(() => {
        const t = this.db.prepare(`SELECT rowid FROM templates WHERE template_id = ?`).get(id) as { rowid: number } | undefined;
        if (!t) return false;
        this.db.prepare(`DELETE FROM templates_fts WHERE rowid = ?`).run(t.rowid);
        this.db.prepare(`DELETE FROM templates WHERE template_id = ?`).run(id);
        this.db.prepare(`UPDATE harvested_sessions SET template_id = NULL WHERE template_id = ?`).run(id);
        this.db.prepare(`DELETE FROM knowledge WHERE knowledge_id NOT IN (SELECT knowledge_id FROM template_knowledge)`).run();
        return true;
      })(),
    );
  }

  /** Feed back how a bootstrapped session went: usage +1, success/failure +1. */
  recordOutcome(templateIds: readonly string[], outcome: Outcome): number {
    return this.run('record outcome', () =>
      this.db.transaction(() => {
        const stmt = this.db.prepare(
          `UPDATE templates SET usage_count = usage_count + 1, success_count = success_count + ?, failure_count = failure_count + ? WHERE template_id = ?`,
        );
        let n = 0;
        for (const id of new Set(templateIds)) n += stmt.run(outcome === 'success' ? 1 : 0, outcome === 'failure' ? 1 : 0, id).changes;
        return n;
      })(),
    );
  }

  /**
   * The decay pass: delete items and knowledge whose decayed confidence fell below
   * `minConfidence` (default 0.05). Returns how many rows went.
   */
  decay(now: number, minConfidence = 0.05): { items: number; knowledge: number } {
    return this.run('decay', () =>
      this.db.transaction(() => {
        const stale = (table: string, idCol: string): number[] =>
          (this.db.prepare(`SELECT ${idCol} AS id, evidence, updated_at FROM ${table}`).all() as { id: number; evidence: number; updated_at: number }[])
            .filter((r) => itemConfidence(r.evidence, r.updated_at, now, this.halfLifeMs) < minConfidence)
            .map((r) => r.id);
        const items = stale('template_items', 'item_id');
        const knowledge = stale('knowledge', 'knowledge_id');
        const delItem = this.db.prepare(`DELETE FROM template_items WHERE item_id = ?`);
        const delK = this.db.prepare(`DELETE FROM knowledge WHERE knowledge_id = ?`);
        for (const id of items) delItem.run(id);
        for (const id of knowledge) delK.run(id);
        return { items: items.length, knowledge: knowledge.length };
      })(),
    );
  }

  /**
   * Insert a template record from an export (already validated and redacted). An existing
   * template with the same id keeps its counters and gains the record's items and sessions.
   */
  importTemplate(t: Omit<Template, 'successRate' | 'items' | 'knowledge'> & {
    items: readonly (TemplateItemInput & { evidence: number; updatedAt: number })[];
    knowledge: readonly (KnowledgeInput & { evidence: number; updatedAt: number })[];
  }): { created: boolean } {
    return this.run('import template', () =>
      this.db.transaction(() => {
        const created =
          this.db
            .prepare(
              `INSERT OR IGNORE INTO templates (template_id, schema_version, name, task_type, repo, task, system_digest, fingerprint, value_score, value_breakdown,
                 session_count, usage_count, success_count, failure_count, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
            )
            .run(t.id, TEMPLATE_SCHEMA_VERSION, t.name, t.taskType, t.repo, t.task, t.systemDigest, t.fingerprint, t.valueScore, JSON.stringify(t.valueBreakdown),
              t.sessionCount, t.usageCount, t.successCount, t.failureCount, t.createdAt, t.updatedAt).changes > 0;
        for (const s of t.sessions) {
          this.db
            .prepare(`INSERT OR IGNORE INTO template_sessions (template_id, session_id, source, outcome, value_score, harvested_at) VALUES (?, ?, ?, ?, ?, ?)`)
            .run(t.id, s.sessionId, s.source, s.outcome, s.valueScore, s.harvestedAt);
        }
        for (const i of t.items) this.upsertItem(t.id, i, null, i.updatedAt, i.evidence);
        for (const k of t.knowledge) {
          const kid = upsertKnowledge(this.db, t.repo, k, null, k.updatedAt, k.evidence);
          this.db.prepare(`INSERT OR IGNORE INTO template_knowledge (template_id, knowledge_id) VALUES (?, ?)`).run(t.id, kid);
        }
        this.reindex(t.id);
        return { created };
      })(),
    );
  }

  private run<T>(what: string, fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw wrapStoreError(err, `template store: ${what}`);
    }
  }
}

export {
  KNOWLEDGE_CATEGORIES,
  USER_PATTERN_KINDS,
  PATTERN_PROMOTION_SESSIONS,
  allPatterns,
  importPattern,
  normalizedHash,
  normalizeText,
  type KnowledgeCategory,
  type KnowledgeInput,
  type KnowledgeItem,
  type UserPattern,
  type UserPatternInput,
  type UserPatternKind,
} from './knowledge.js';

/**
 * Reading the warm snapshot (see snapshot-format.ts) and answering the template store's read
 * queries from it, so `bootstrap()` runs unchanged on it. This is on the hook's start-up path:
 * it loads no SQLite, no zod, no logger — only node:fs and pure helpers. The file is read as
 * bytes; only its header line is decoded and parsed up front, a template's detail line when a
 * query first needs it (its items for `get`, its search text for a phrase query).
 *
 * Each query does what its SQL in store/templates.ts does: the same filters, orders and limits,
 * confidences decayed to `now` from evidence and age, and `search` ranks with the BM25 formula
 * of SQLite FTS5 (k1 = 1.2, b = 0.75, one column) over the same search text, tokenized like
 * FTS5's default unicode61 tokenizer.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { itemConfidence } from '../store/confidence.js';
import type { KnowledgeItem, Template, TemplateSummary, UserPattern } from '../store/templates.js';
import type { TaskType } from '../text/tasks.js';
import { ContextdError, ErrorCode } from '../util/errors.js';
import {
  WARM_SNAPSHOT_FILE,
  WARM_SNAPSHOT_FORMAT,
  WARM_SNAPSHOT_VERSION,
  type SnapshotDetail,
  type SnapshotTemplateHead,
  type Unscored,
  type WarmSnapshotHeader,
} from './snapshot-format.js';
import type { TemplateSource } from './source.js';

const BM25_K1 = 1.2;
const BM25_B = 0.75;
/** Most quoted terms one MATCH expression holds (store/fts.ts MAX_MATCH_TERMS). */
const MAX_MATCH_TERMS = 64;
/** Most repo-independent plus repo patterns returned (the store's LIMIT). */
const MAX_PATTERNS = 50;

const TOKEN_SPLIT = /[^\p{L}\p{N}\p{Co}]+/u;
const MARKS = /\p{M}/gu;

/** Tokens of `text` as FTS5's unicode61 tokenizer makes them: letters and digits, lower-cased, diacritics removed. */
export function fts5Tokens(text: string): string[] {
  const folded = text.toLowerCase().normalize('NFD').replace(MARKS, '');
  return folded.split(TOKEN_SPLIT).filter((t) => t.length > 0);
}

/** How often the phrase `tokens` occurs in `docTokens`. */
function phraseCount(docTokens: readonly string[], tokens: readonly string[]): number {
  let n = 0;
  outer: for (let i = 0; i + tokens.length <= docTokens.length; i++) {
    for (let j = 0; j < tokens.length; j++) if (docTokens[i + j] !== tokens[j]) continue outer;
    n++;
  }
  return n;
}

function summaryOf(t: SnapshotTemplateHead): TemplateSummary {
  return {
    id: t.id,
    name: t.name,
    taskType: t.taskType,
    repo: t.repo,
    task: t.task,
    valueScore: t.valueScore,
    sessionCount: t.sessionCount,
    usageCount: t.usageCount,
    successCount: t.successCount,
    failureCount: t.failureCount,
    successRate: t.successRate,
    createdAt: t.createdAt,
    updatedAt: t.updatedAt,
  };
}

function invalid(path: string, why: string): ContextdError {
  return new ContextdError(ErrorCode.WARM_SNAPSHOT_INVALID, `warm snapshot ${path} ${why}; the template store is read instead`, { path });
}

const NEWLINE = 0x0a;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * An item or knowledge entry as the queries read it: confidences are decayed from `evidence`
 * and `updatedAt`, so a line that is JSON but lacks them (`null`, a string) is not one.
 */
function isScoredEntry(v: unknown): boolean {
  return isRecord(v) && typeof v['id'] === 'number' && typeof v['text'] === 'string' && typeof v['evidence'] === 'number' && typeof v['updatedAt'] === 'number';
}

/**
 * Parse a snapshot file's header and check it (written by us; a foreign or older file is
 * refused, not guessed at). Details stay bytes until a query needs one.
 */
export function parseWarmSnapshot(data: Buffer | string, path = WARM_SNAPSHOT_FILE): SnapshotTemplateSource {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const end = bytes.indexOf(NEWLINE);
  let v: unknown;
  try {
    v = JSON.parse(bytes.toString('utf8', 0, end < 0 ? bytes.length : end));
  } catch (err) {
    throw invalid(path, `is not JSON (${(err as Error).message})`);
  }
  const o = v as Partial<WarmSnapshotHeader> | null;
  if (typeof o !== 'object' || o === null || o.format !== WARM_SNAPSHOT_FORMAT) throw invalid(path, 'is not a contextd warm snapshot');
  if (o.version !== WARM_SNAPSHOT_VERSION) throw invalid(path, `has version ${String(o.version)}, this contextd reads ${WARM_SNAPSHOT_VERSION}`);
  const arrays = Array.isArray(o.templates) && Array.isArray(o.knowledge) && Array.isArray(o.patterns);
  if (!arrays || typeof o.repoKnowledge !== 'object' || o.repoKnowledge === null || typeof o.halfLifeMs !== 'number' || typeof o.writtenAt !== 'number')
    throw invalid(path, 'is incomplete');
  const details = end < 0 ? Buffer.alloc(0) : bytes.subarray(end + 1);
  for (const t of o.templates as unknown[]) {
    const h = t as Partial<SnapshotTemplateHead> | null;
    const at = h?.detail;
    const located = Array.isArray(at) && Number.isInteger(at[0]) && Number.isInteger(at[1]) && at[0] >= 0 && at[1] >= 0 && at[0] + at[1] <= details.length;
    if (typeof h?.id !== 'string' || typeof h.search?.length !== 'number' || !isRecord(h.search.tf) || !Array.isArray(h.knowledgeIds) || !located) throw invalid(path, 'holds a malformed template');
  }
  if (!(o.knowledge as unknown[]).every(isScoredEntry)) throw invalid(path, 'holds a malformed knowledge item');
  if (!Object.values(o.repoKnowledge).every((ids) => Array.isArray(ids))) throw invalid(path, 'holds a malformed repository knowledge list');
  if (!(o.patterns as unknown[]).every((p) => isRecord(p) && typeof p['repo'] === 'string')) throw invalid(path, 'holds a malformed user pattern');
  return new SnapshotTemplateSource(o as WarmSnapshotHeader, details, path);
}

/**
 * The snapshot in `stateDir`, ready to query; undefined when there is none. Throws
 * WARM_SNAPSHOT_INVALID when the file is there but unusable (queries throw it too, for a detail
 * line that cannot be parsed).
 */
export function readWarmSnapshot(stateDir: string): SnapshotTemplateSource | undefined {
  const path = join(stateDir, WARM_SNAPSHOT_FILE);
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw invalid(path, `cannot be read (${(err as Error).message})`);
  }
  return parseWarmSnapshot(bytes, path);
}

/** The template store's read queries, answered from a snapshot. */
export class SnapshotTemplateSource implements TemplateSource {
  private readonly byId: Map<string, SnapshotTemplateHead>;
  private readonly knowledgeById: Map<number, Unscored<KnowledgeItem>>;
  private readonly avgLength: number;
  /** Detail lines parsed so far, by template id. */
  private readonly parsed = new Map<string, SnapshotDetail>();

  /** Use {@link parseWarmSnapshot}: `details` are the bytes after the header line, which `file` locates. */
  constructor(
    private readonly file: WarmSnapshotHeader,
    private readonly details: Buffer,
    private readonly path: string,
  ) {
    this.byId = new Map(file.templates.map((t) => [t.id, t]));
    this.knowledgeById = new Map(file.knowledge.map((k) => [k.id, k]));
    const total = file.templates.reduce((s, t) => s + t.search.length, 0);
    this.avgLength = file.templates.length > 0 ? total / file.templates.length : 0;
  }

  /** When the snapshot was taken (epoch ms). */
  get writtenAt(): number {
    return this.file.writtenAt;
  }

  /** A template's detail line, parsed on first use; throws WARM_SNAPSHOT_INVALID when it is not one. */
  private detail(t: SnapshotTemplateHead): SnapshotDetail {
    let d = this.parsed.get(t.id);
    if (d) return d;
    const [offset, length] = t.detail;
    try {
      d = JSON.parse(this.details.toString('utf8', offset, offset + length)) as SnapshotDetail;
    } catch (err) {
      throw invalid(this.path, `holds an unreadable detail of template ${t.id} (${(err as Error).message})`);
    }
    if (!isRecord(d) || !Array.isArray(d.items) || !d.items.every(isScoredEntry) || typeof d.body !== 'string') throw invalid(this.path, `holds a malformed detail of template ${t.id}`);
    this.parsed.set(t.id, d);
    return d;
  }

  /** BM25 matches for any of `terms`, best first; `rank` positive, higher is better (as the store's FTS5 query). */
  search(terms: readonly string[], limit = 50): { templateId: string; rank: number }[] {
    const clean = [...new Set(terms.map((t) => t.replace(/"/g, '').trim()).filter((t) => t.length > 0))].slice(0, MAX_MATCH_TERMS);
    const phrases = clean.map(fts5Tokens).filter((p) => p.length > 0);
    const n = this.file.templates.length;
    if (phrases.length === 0 || n === 0) return [];
    const docTokens = new Map<string, string[]>();
    // The term table comes from JSON.parse: a plain object, so only its own keys are terms
    // (`constructor` and its kin are inherited, not words a template holds).
    const tf = (t: SnapshotTemplateHead, term: string): number => (Object.hasOwn(t.search.tf, term) ? (t.search.tf[term] ?? 0) : 0);
    const freq = (t: SnapshotTemplateHead, phrase: readonly string[]): number => {
      if (phrase.length === 1) return tf(t, phrase[0] as string);
      if (phrase.some((p) => tf(t, p) === 0)) return 0;
      let tokens = docTokens.get(t.id);
      if (!tokens) docTokens.set(t.id, (tokens = fts5Tokens(this.detail(t).body)));
      return phraseCount(tokens, phrase);
    };
    const freqs = phrases.map((p) => this.file.templates.map((t) => freq(t, p)));
    const idf = freqs.map((f) => {
      const hits = f.filter((x) => x > 0).length;
      const v = Math.log((n - hits + 0.5) / (hits + 0.5));
      return v > 0 ? v : 1e-6;
    });
    const out: { templateId: string; rank: number }[] = [];
    this.file.templates.forEach((t, d) => {
      let score = 0;
      let matched = false;
      const norm = BM25_K1 * (1 - BM25_B + (BM25_B * t.search.length) / (this.avgLength || 1));
      for (let p = 0; p < phrases.length; p++) {
        const f = freqs[p]?.[d] ?? 0;
        if (f === 0) continue;
        matched = true;
        score += ((idf[p] ?? 0) * (f * (BM25_K1 + 1))) / (f + norm);
      }
      if (matched) out.push({ templateId: t.id, rank: score });
    });
    return out.sort((a, b) => b.rank - a.rank).slice(0, limit);
  }

  /** Summaries, newest first, filtered as the store's `list` filters. */
  list(filter: { repo?: string; repoName?: string; taskType?: TaskType; limit?: number } = {}): TemplateSummary[] {
    const suffix = filter.repoName !== undefined ? `/${filter.repoName.toLowerCase()}` : undefined;
    const rows = this.file.templates.filter(
      (t) =>
        (filter.repo === undefined || t.repo === filter.repo) &&
        // SQLite's LIKE ignores ASCII case; `=` does not.
        (filter.repoName === undefined || t.repo === filter.repoName || t.repo.toLowerCase().endsWith(suffix as string)) &&
        (filter.taskType === undefined || t.taskType === filter.taskType),
    );
    rows.sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const limit = filter.limit ?? -1;
    return (limit >= 0 ? rows.slice(0, limit) : rows).map(summaryOf);
  }

  summaries(ids: readonly string[]): TemplateSummary[] {
    return ids.flatMap((id) => {
      const t = this.byId.get(id);
      return t ? [summaryOf(t)] : [];
    });
  }

  get(id: string, now: number = Date.now()): Template | undefined {
    const t = this.byId.get(id);
    if (!t) return undefined;
    const { knowledgeIds: _ids, search: _search, detail: _detail, ...rest } = t;
    const items = this.detail(t).items.map((i) => ({ ...i, confidence: itemConfidence(i.evidence, i.updatedAt, now, this.file.halfLifeMs) }));
    return { ...rest, items, knowledge: this.knowledgeFor([id], undefined, now) };
  }

  knowledgeFor(templateIds: readonly string[], repo: string | undefined, now: number = Date.now()): KnowledgeItem[] {
    const ids = new Set<number>();
    for (const id of templateIds) for (const k of this.byId.get(id)?.knowledgeIds ?? []) ids.add(k);
    if (repo) for (const k of this.file.repoKnowledge[repo] ?? []) ids.add(k);
    const out: KnowledgeItem[] = [];
    for (const k of ids) {
      const item = this.knowledgeById.get(k);
      if (item) out.push({ ...item, confidence: itemConfidence(item.evidence, item.updatedAt, now, this.file.halfLifeMs) });
    }
    return out.sort((a, b) => b.confidence - a.confidence || b.evidence - a.evidence || a.id - b.id);
  }

  patterns(repo?: string): UserPattern[] {
    const r = repo ?? '';
    return this.file.patterns.filter((p) => p.repo === '' || p.repo === r).slice(0, MAX_PATTERNS);
  }
}

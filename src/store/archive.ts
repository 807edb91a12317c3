import type { Db } from './db.js';
import { wrapStoreError } from './db.js';
import { matchText } from './fts.js';

/**
 * One archived original message. The store keeps it as JSON and reads back only what it
 * names here; any normalized transcript message fits (store is a leaf and knows no model).
 */
export interface ArchivedMessage {
  readonly id: string;
  readonly role: string;
  readonly text: string;
  readonly toolName?: string;
  readonly toolCalls?: readonly { readonly id: string; readonly name: string; readonly arguments: string }[];
}

/** The originals a compaction edit replaced, kept so `section.recall` can return them. */
export interface ArchivedEdit {
  readonly handle: string;
  readonly sessionId: string;
  readonly planId?: string | undefined;
  readonly editId?: string | undefined;
  readonly reason: string;
  readonly sectionIds: readonly string[];
  readonly messages: readonly ArchivedMessage[];
  readonly tokens: number;
  readonly createdAt: number;
  /** Secrets replaced by `[REDACTED:<rule>]` markers before storing, counted per rule. */
  readonly redactions?: readonly RedactionCount[] | undefined;
}

/** How many findings of one redaction rule were replaced. */
export interface RedactionCount {
  readonly rule: string;
  readonly count: number;
}

/** One `archive.search` hit: an archived edit and how well it matched (higher is better). */
export interface ArchiveHit {
  readonly handle: string;
  readonly sessionId: string;
  /** Negated FTS5 BM25: positive, higher is a better match. Comparable within one query only. */
  readonly score: number;
  readonly reason: string;
  readonly messages: readonly ArchivedMessage[];
}

/** Options of `Archive.search`. */
export interface ArchiveSearchOptions {
  /** Only this session's archive. */
  readonly sessionId?: string | undefined;
  /** Most hits returned (default 5). */
  readonly limit?: number | undefined;
}

interface Row {
  handle: string;
  session_id: string;
  plan_id: string | null;
  edit_id: string | null;
  reason: string;
  section_ids: string;
  messages: string;
  tokens: number;
  created_at: number;
  redactions: string;
}

/** Lossless archive of compacted originals, keyed by the handle quoted in each summary. */
export class Archive {
  private readonly insert;
  private readonly byHandle;
  private readonly exists;
  private readonly relinkRow;
  private readonly searchAll;
  private readonly searchSession;

  constructor(private readonly db: Db) {
    this.insert = db.prepare(
      `INSERT INTO archive (handle, session_id, plan_id, edit_id, reason, section_ids, messages, tokens, created_at, redactions)
       VALUES (@handle, @sessionId, @planId, @editId, @reason, @sectionIds, @messages, @tokens, @createdAt, @redactions)`,
    );
    this.byHandle = db.prepare(`SELECT * FROM archive WHERE handle = ?`);
    this.exists = db.prepare(`SELECT 1 FROM archive WHERE handle = ?`).pluck();
    this.searchAll = db.prepare(
      `SELECT a.*, bm25(archive_fts) AS bm25 FROM archive_fts f JOIN archive a ON a.handle = f.handle
       WHERE archive_fts MATCH @match ORDER BY bm25 LIMIT @limit`,
    );
    this.searchSession = db.prepare(
      `SELECT a.*, bm25(archive_fts) AS bm25 FROM archive_fts f JOIN archive a ON a.handle = f.handle
       WHERE archive_fts MATCH @match AND f.session_id = @sessionId ORDER BY bm25 LIMIT @limit`,
    );
    this.relinkRow = db.prepare(`UPDATE archive SET plan_id = @planId, edit_id = @editId, reason = @reason, created_at = @createdAt WHERE handle = @handle`);
  }

  /**
   * Store several edits atomically (one plan's worth). A handle names the replaced messages,
   * so when it is archived already its originals are the same: only the plan it now belongs
   * to is updated, and the (possibly large) messages are not serialized and written again.
   */
  putMany(entries: readonly ArchivedEdit[]): void {
    try {
      this.db.transaction(() => {
        for (const e of entries) {
          const relinked = this.relinkRow.run({ handle: e.handle, planId: e.planId ?? null, editId: e.editId ?? null, reason: e.reason, createdAt: e.createdAt });
          if (relinked.changes > 0) continue;
          this.insert.run({
            handle: e.handle,
            sessionId: e.sessionId,
            planId: e.planId ?? null,
            editId: e.editId ?? null,
            reason: e.reason,
            sectionIds: JSON.stringify(e.sectionIds),
            messages: JSON.stringify(e.messages),
            tokens: e.tokens,
            createdAt: e.createdAt,
            redactions: JSON.stringify(e.redactions ?? []),
          });
        }
      })();
    } catch (err) {
      throw wrapStoreError(err, 'cannot archive compacted originals');
    }
  }

  /**
   * Name the plan (and its edit, reason and time) that archived originals now belong to, for
   * handles archived already; unknown handles are left alone. Atomic.
   */
  relink(links: readonly { readonly handle: string; readonly planId: string; readonly editId: string; readonly reason: string; readonly createdAt: number }[]): void {
    if (links.length === 0) return;
    try {
      this.db.transaction(() => {
        for (const l of links) this.relinkRow.run({ handle: l.handle, planId: l.planId, editId: l.editId, reason: l.reason, createdAt: l.createdAt });
      })();
    } catch (err) {
      throw wrapStoreError(err, 'cannot relink archived originals');
    }
  }

  /** Whether originals are archived under this handle (without reading them). */
  has(handle: string): boolean {
    try {
      return this.exists.get(handle) !== undefined;
    } catch (err) {
      throw wrapStoreError(err, 'cannot read the archive');
    }
  }

  get(handle: string): ArchivedEdit | undefined {
    const r = this.byHandle.get(handle) as Row | undefined;
    return r ? fromRow(r) : undefined;
  }

  /**
   * Archived edits whose originals match `query` (free text: words are OR-ed, punctuation is
   * ignored), best BM25 match first. A query with no letters or digits finds nothing.
   */
  search(query: string, options: ArchiveSearchOptions = {}): ArchiveHit[] {
    const match = matchText(query);
    if (match === undefined) return [];
    const limit = options.limit ?? 5;
    let rows: (Row & { bm25: number })[];
    try {
      rows = (
        options.sessionId !== undefined
          ? this.searchSession.all({ match, sessionId: options.sessionId, limit })
          : this.searchAll.all({ match, limit })
      ) as (Row & { bm25: number })[];
    } catch (err) {
      throw wrapStoreError(err, 'cannot search the archive');
    }
    return rows.map((r) => ({ handle: r.handle, sessionId: r.session_id, score: -r.bm25, reason: r.reason, messages: JSON.parse(r.messages) as ArchivedMessage[] }));
  }

  count(sessionId?: string): number {
    const row = sessionId
      ? (this.db.prepare(`SELECT COUNT(*) AS n FROM archive WHERE session_id = ?`).get(sessionId) as { n: number })
      : (this.db.prepare(`SELECT COUNT(*) AS n FROM archive`).get() as { n: number });
    return row.n;
  }
}

function fromRow(r: Row): ArchivedEdit {
  return {
    handle: r.handle,
    sessionId: r.session_id,
    planId: r.plan_id ?? undefined,
    editId: r.edit_id ?? undefined,
    reason: r.reason,
    sectionIds: JSON.parse(r.section_ids) as string[],
    messages: JSON.parse(r.messages) as ArchivedMessage[],
    tokens: r.tokens,
    createdAt: r.created_at,
    redactions: JSON.parse(r.redactions) as RedactionCount[],
  };
}

/**
 * Archived messages as plain text, one block per message (`--- role (tool)`, its text, its
 * tool calls): what `contextd recall` prints and what the proxy's recall tool answers.
 */
export function archivedText(messages: readonly ArchivedMessage[]): string {
  const out: string[] = [];
  for (const m of messages) {
    out.push(`--- ${m.role}${m.toolName ? ` (${m.toolName})` : ''}`);
    if (m.text) out.push(m.text);
    for (const c of m.toolCalls ?? []) out.push(`→ ${c.name} ${c.arguments}`);
  }
  return out.join('\n');
}

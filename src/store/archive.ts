import type { Message } from '../ingest/types.js';
import type { Db } from './db.js';
import { wrapStoreError } from './db.js';

/** The originals a compaction edit replaced, kept so `section.recall` can return them. */
export interface ArchivedEdit {
  readonly handle: string;
  readonly sessionId: string;
  readonly planId?: string | undefined;
  readonly editId?: string | undefined;
  readonly reason: string;
  readonly sectionIds: readonly string[];
  readonly messages: readonly Message[];
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
  private readonly relink;

  constructor(private readonly db: Db) {
    this.insert = db.prepare(
      `INSERT INTO archive (handle, session_id, plan_id, edit_id, reason, section_ids, messages, tokens, created_at, redactions)
       VALUES (@handle, @sessionId, @planId, @editId, @reason, @sectionIds, @messages, @tokens, @createdAt, @redactions)`,
    );
    this.byHandle = db.prepare(`SELECT * FROM archive WHERE handle = ?`);
    this.relink = db.prepare(`UPDATE archive SET plan_id = @planId, edit_id = @editId, reason = @reason, created_at = @createdAt WHERE handle = @handle`);
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
          const relinked = this.relink.run({ handle: e.handle, planId: e.planId ?? null, editId: e.editId ?? null, reason: e.reason, createdAt: e.createdAt });
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

  get(handle: string): ArchivedEdit | undefined {
    const r = this.byHandle.get(handle) as Row | undefined;
    if (!r) return undefined;
    return {
      handle: r.handle,
      sessionId: r.session_id,
      planId: r.plan_id ?? undefined,
      editId: r.edit_id ?? undefined,
      reason: r.reason,
      sectionIds: JSON.parse(r.section_ids) as string[],
      messages: JSON.parse(r.messages) as Message[],
      tokens: r.tokens,
      createdAt: r.created_at,
      redactions: JSON.parse(r.redactions) as RedactionCount[],
    };
  }

  count(sessionId?: string): number {
    const row = sessionId
      ? (this.db.prepare(`SELECT COUNT(*) AS n FROM archive WHERE session_id = ?`).get(sessionId) as { n: number })
      : (this.db.prepare(`SELECT COUNT(*) AS n FROM archive`).get() as { n: number });
    return row.n;
  }
}

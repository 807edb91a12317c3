import type { Db } from './db.js';
import { wrapStoreError } from './db.js';

/** One thing that happened to a tailed session's model that its transcript does not hold. */
export type ModelStep =
  /** The agent applied edits of this plan (which ones: the plan log) to the model read to `offset`. */
  | { readonly kind: 'edits'; readonly planId: string; readonly offset: number }
  /** The model read to `offset` was rebuilt from its own messages (`rebaseModel`). */
  | { readonly kind: 'rebase'; readonly offset: number };

/** A session's stored steps, or why they cannot be replayed. */
export type StoredSteps = { readonly steps: readonly ModelStep[] } | { readonly unreplayable: string };

interface Row {
  seq: number;
  kind: string;
  plan_id: string | null;
  offset: number | null;
  why: string | null;
}

/** The seq of a session's "cannot be replayed" row (steps count from 0). */
const UNREPLAYABLE_SEQ = -1;

/**
 * Each tailed session's model steps (daemon/replay-log.ts), kept so that a restarted daemon
 * rebuilds the model the agent holds — its transcript with the applied edits replayed — and not
 * the transcript alone. Written one row per step as it happens; read once per session at start.
 */
export class ModelSteps {
  private readonly insert;
  private readonly deleteAll;
  private readonly select;

  constructor(db: Db) {
    this.insert = db.prepare(`INSERT OR REPLACE INTO model_steps (session_id, seq, kind, plan_id, offset, why) VALUES (?, ?, ?, ?, ?, ?)`);
    this.deleteAll = db.prepare(`DELETE FROM model_steps WHERE session_id = ?`);
    this.select = db.prepare(`SELECT seq, kind, plan_id, offset, why FROM model_steps WHERE session_id = ? ORDER BY seq`);
  }

  /** Store step number `seq` (from 0) of a session. */
  append(sessionId: string, seq: number, step: ModelStep): void {
    try {
      this.insert.run(sessionId, seq, step.kind, step.kind === 'edits' ? step.planId : null, step.offset, null);
    } catch (err) {
      throw wrapStoreError(err, 'cannot store a model step');
    }
  }

  /** The session's steps can no longer be replayed (`why`); its stored steps are kept, unread. */
  markUnreplayable(sessionId: string, why: string): void {
    try {
      this.insert.run(sessionId, UNREPLAYABLE_SEQ, 'unreplayable', null, null, why);
    } catch (err) {
      throw wrapStoreError(err, 'cannot store a model step');
    }
  }

  /** Forget a session's steps (its model is its transcript alone now, or the transcript is gone). */
  clear(sessionId: string): void {
    try {
      this.deleteAll.run(sessionId);
    } catch (err) {
      throw wrapStoreError(err, 'cannot clear model steps');
    }
  }

  /**
   * A session's steps in order (undefined: none stored), or why they cannot be replayed: marked
   * so, a step missing (a gap in `seq`: its write failed), or a row that is not a step.
   */
  load(sessionId: string): StoredSteps | undefined {
    let rows: Row[];
    try {
      rows = this.select.all(sessionId) as Row[];
    } catch (err) {
      throw wrapStoreError(err, 'cannot read model steps');
    }
    if (rows.length === 0) return undefined;
    const steps: ModelStep[] = [];
    for (const r of rows) {
      if (r.seq === UNREPLAYABLE_SEQ) return { unreplayable: r.why ?? 'marked unreplayable' };
      if (r.seq !== steps.length) return { unreplayable: `model step ${steps.length} of session ${sessionId} is missing` };
      if (r.kind === 'edits' && r.plan_id !== null && r.offset !== null) steps.push({ kind: 'edits', planId: r.plan_id, offset: r.offset });
      else if (r.kind === 'rebase' && r.offset !== null) steps.push({ kind: 'rebase', offset: r.offset });
      else return { unreplayable: `model step ${r.seq} of session ${sessionId} is not a step` };
    }
    return { steps };
  }
}

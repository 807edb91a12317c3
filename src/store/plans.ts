import type { Db } from './db.js';
import { wrapStoreError } from './db.js';

export type PlanStatus = 'proposed' | 'advisory' | 'applied' | 'partially-applied' | 'rejected' | 'expired';

export interface StoredPlan {
  readonly planId: string;
  readonly sessionId: string;
  readonly createdAt: number;
  readonly status: PlanStatus;
  readonly statusReason?: string | undefined;
  readonly headroomBefore: number;
  readonly headroomAfter: number;
  /** The plan as it was proposed (JSON). */
  readonly plan: unknown;
  /** Applied (or partially): the ids of the edits the agent applied, in the plan's order. */
  readonly appliedEditIds?: readonly string[] | undefined;
  /** Applied: the transcript offset the session's model had been read to when it was. */
  readonly appliedOffset?: number | undefined;
}

/** How a plan was applied to a tailed session's model: its edits, at which transcript offset. */
export interface AppliedAt {
  readonly status: PlanStatus;
  readonly editIds: readonly string[] | undefined;
  readonly offset: number | undefined;
}

interface Row {
  plan_id: string;
  session_id: string;
  created_at: number;
  status: PlanStatus;
  status_reason: string | null;
  headroom_before: number;
  headroom_after: number;
  /** From plan_bodies (NULL when the body row is missing). */
  plan: string | null;
  applied_edit_ids: string | null;
  applied_offset: number | null;
}

/**
 * Every plan the daemon made, with what became of it. The body (the plan as proposed) lives in
 * a table of its own, written once: a status change rewrites only the small status row.
 */
export class PlanLog {
  private readonly insert;
  private readonly insertBody;
  private readonly update;
  private readonly byId;
  private readonly markApplied;
  private readonly appliedById;
  private readonly pruneBodies;
  private readonly pruneRows;
  private readonly expireOpenRows;
  private readonly pruneAppliedBodies;

  constructor(private readonly db: Db) {
    this.insert = db.prepare(
      `INSERT OR REPLACE INTO plans (plan_id, session_id, created_at, status, status_reason, headroom_before, headroom_after)
       VALUES (@planId, @sessionId, @createdAt, @status, @statusReason, @headroomBefore, @headroomAfter)`,
    );
    this.insertBody = db.prepare(`INSERT OR REPLACE INTO plan_bodies (plan_id, plan) VALUES (?, ?)`);
    this.update = db.prepare(`UPDATE plans SET status = ?, status_reason = ? WHERE plan_id = ?`);
    this.byId = db.prepare(`SELECT p.*, b.plan AS plan FROM plans p LEFT JOIN plan_bodies b ON b.plan_id = p.plan_id WHERE p.plan_id = ?`);
    this.markApplied = db.prepare(`UPDATE plans SET status = ?, status_reason = ?, applied_edit_ids = ?, applied_offset = ? WHERE plan_id = ?`);
    this.appliedById = db.prepare(`SELECT status, applied_edit_ids, applied_offset FROM plans WHERE plan_id = ?`);
    // a session's plans that ended unapplied, newest first, past the first ? (the ones kept)
    const ended = `SELECT plan_id FROM plans WHERE session_id = ? AND status IN ('expired', 'rejected') ORDER BY created_at DESC, plan_id DESC LIMIT -1 OFFSET ?`;
    this.pruneBodies = db.prepare(`DELETE FROM plan_bodies WHERE plan_id IN (${ended})`);
    // a row goes with its body (bodies are kept for fewer plans than rows)
    this.pruneRows = db.prepare(`DELETE FROM plans WHERE plan_id IN (${ended})`);
    this.expireOpenRows = db.prepare(`UPDATE plans SET status = 'expired', status_reason = ? WHERE status IN ('proposed', 'advisory')`);
    // a session's applied plans that no kept model step (store/model-steps) names and that are
    // not in the JSON array ? (the steps of the model in memory)
    this.pruneAppliedBodies = db.prepare(
      `DELETE FROM plan_bodies WHERE plan_id IN (
         SELECT p.plan_id FROM plans p
         WHERE p.session_id = ? AND p.status IN ('applied', 'partially-applied')
           AND NOT EXISTS (SELECT 1 FROM model_steps m WHERE m.session_id = p.session_id AND m.plan_id = p.plan_id)
           AND p.plan_id NOT IN (SELECT value FROM json_each(?)))`,
    );
  }

  /** Store a plan (its status row and its body, atomically); a plan with the same id is replaced. */
  record(p: StoredPlan): void {
    const body = JSON.stringify(p.plan);
    try {
      this.db.transaction(() => {
        this.insert.run({ planId: p.planId, sessionId: p.sessionId, createdAt: p.createdAt, status: p.status, statusReason: p.statusReason ?? null, headroomBefore: p.headroomBefore, headroomAfter: p.headroomAfter });
        this.insertBody.run(p.planId, body);
      })();
    } catch (err) {
      throw wrapStoreError(err, 'cannot record plan');
    }
  }

  setStatus(planId: string, status: PlanStatus, reason?: string): void {
    try {
      this.update.run(status, reason ?? null, planId);
    } catch (err) {
      throw wrapStoreError(err, 'cannot update plan status');
    }
  }

  /**
   * The agent applied `editIds` of the plan (all of them: 'applied'; some: 'partially-applied') to
   * a model read to transcript `offset` (undefined: not a tailed session, or not known). False
   * when no plan has that id.
   */
  setApplied(planId: string, status: 'applied' | 'partially-applied', reason: string | undefined, editIds: readonly string[], offset: number | undefined): boolean {
    try {
      return this.markApplied.run(status, reason ?? null, JSON.stringify(editIds), offset ?? null, planId).changes > 0;
    } catch (err) {
      throw wrapStoreError(err, 'cannot update plan status');
    }
  }

  /** How the plan was applied (undefined: no such plan); its body is not read. */
  appliedAt(planId: string): AppliedAt | undefined {
    let r: Pick<Row, 'status' | 'applied_edit_ids' | 'applied_offset'> | undefined;
    try {
      r = this.appliedById.get(planId) as typeof r;
    } catch (err) {
      throw wrapStoreError(err, 'cannot read plan');
    }
    return r ? { status: r.status, editIds: parseIds(r.applied_edit_ids), offset: r.applied_offset ?? undefined } : undefined;
  }

  /**
   * The plan with this id (undefined: no such plan). A body that is not JSON reads as `plan:
   * undefined` (the row is corrupt); a failed read throws STORE_FAILED or STORE_FULL (the
   * database could not be read now, e.g. SQLITE_BUSY: worth retrying).
   */
  get(planId: string): StoredPlan | undefined {
    let r: Row | undefined;
    try {
      r = this.byId.get(planId) as Row | undefined;
    } catch (err) {
      throw wrapStoreError(err, 'cannot read plan');
    }
    if (!r) return undefined;
    return {
      planId: r.plan_id,
      sessionId: r.session_id,
      createdAt: r.created_at,
      status: r.status,
      statusReason: r.status_reason ?? undefined,
      headroomBefore: r.headroom_before,
      headroomAfter: r.headroom_after,
      plan: parseBody(r.plan),
      appliedEditIds: parseIds(r.applied_edit_ids),
      appliedOffset: r.applied_offset ?? undefined,
    };
  }

  /**
   * Bound what a session's plans keep. Of its plans that ended unapplied (`expired`, `rejected`:
   * no ack can apply them any more, nothing replays them), only the newest `keepBodies` keep their
   * body (the plan as proposed, with every edit's score factors: tens of kB) and the newest
   * `keepRows` their status row (what an ack of an old plan id is told); older ones are deleted.
   * Plans still open are never pruned, nor the rows of applied plans (what an ack is told, and
   * what `checkSteps` reads). An applied plan keeps its body while a rebuild or a restart may
   * replay it: while a kept model step (store/model-steps) or one of `replayed` (the plan ids of
   * the model in memory: its steps a rebuild after a release replays) names it. Once the session's
   * model was built from its transcript alone (rewritten, removed, fed over the socket), no step
   * names it and the body goes. Returns how many bodies and rows went.
   */
  prune(sessionId: string, keepBodies: number, keepRows: number, replayed: readonly string[] = []): { bodies: number; rows: number } {
    try {
      return this.db.transaction(() => ({
        bodies: this.pruneBodies.run(sessionId, keepBodies).changes + this.pruneAppliedBodies.run(sessionId, JSON.stringify(replayed)).changes,
        rows: this.pruneRows.run(sessionId, keepRows).changes,
      }))();
    } catch (err) {
      throw wrapStoreError(err, 'cannot prune plans');
    }
  }

  /**
   * Plans still open (proposed, advisory) as a daemon starts were open in a run that ended: no
   * ack can apply them now. They are marked expired with `reason` (an ack of one is told so,
   * and they are pruned like other ended plans). Returns how many.
   */
  expireOpen(reason: string): number {
    try {
      return this.expireOpenRows.run(reason).changes;
    } catch (err) {
      throw wrapStoreError(err, 'cannot update plan status');
    }
  }

  list(sessionId: string): StoredPlan[] {
    return (this.db.prepare(`SELECT plan_id FROM plans WHERE session_id = ? ORDER BY created_at`).all(sessionId) as { plan_id: string }[])
      .map((r) => this.get(r.plan_id))
      .filter((p): p is StoredPlan => p !== undefined);
  }
}

/** A stored plan body, or undefined when it is missing or not JSON. */
function parseBody(json: string | null): unknown {
  if (json === null) return undefined;
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}

/** A stored list of edit ids, or undefined when there is none or it is not one. */
function parseIds(json: string | null): readonly string[] | undefined {
  if (json === null) return undefined;
  try {
    const v = JSON.parse(json) as unknown;
    return Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined;
  } catch {
    return undefined;
  }
}

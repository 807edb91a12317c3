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
}

interface Row {
  plan_id: string;
  session_id: string;
  created_at: number;
  status: PlanStatus;
  status_reason: string | null;
  headroom_before: number;
  headroom_after: number;
  plan: string;
}

/** Every plan the daemon made, with what became of it. */
export class PlanLog {
  private readonly insert;
  private readonly update;
  private readonly byId;

  constructor(private readonly db: Db) {
    this.insert = db.prepare(
      `INSERT OR REPLACE INTO plans (plan_id, session_id, created_at, status, status_reason, headroom_before, headroom_after, plan)
       VALUES (@planId, @sessionId, @createdAt, @status, @statusReason, @headroomBefore, @headroomAfter, @plan)`,
    );
    this.update = db.prepare(`UPDATE plans SET status = ?, status_reason = ? WHERE plan_id = ?`);
    this.byId = db.prepare(`SELECT * FROM plans WHERE plan_id = ?`);
  }

  record(p: StoredPlan): void {
    try {
      this.insert.run({ ...p, statusReason: p.statusReason ?? null, plan: JSON.stringify(p.plan) });
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

  get(planId: string): StoredPlan | undefined {
    const r = this.byId.get(planId) as Row | undefined;
    if (!r) return undefined;
    return {
      planId: r.plan_id,
      sessionId: r.session_id,
      createdAt: r.created_at,
      status: r.status,
      statusReason: r.status_reason ?? undefined,
      headroomBefore: r.headroom_before,
      headroomAfter: r.headroom_after,
      plan: JSON.parse(r.plan) as unknown,
    };
  }

  list(sessionId: string): StoredPlan[] {
    return (this.db.prepare(`SELECT plan_id FROM plans WHERE session_id = ? ORDER BY created_at`).all(sessionId) as { plan_id: string }[])
      .map((r) => this.get(r.plan_id))
      .filter((p): p is StoredPlan => p !== undefined);
  }
}

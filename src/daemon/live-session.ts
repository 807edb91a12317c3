import type { TranscriptFormat } from '../ingest/types.js';
import type { SessionModel } from '../model/index.js';
import { SummaryCache } from '../compact/index.js';
import type { HeadroomSnapshot } from '../model/types.js';

/** Where a session's usage sits relative to the two watermarks (design §5). */
export type Zone = 'ok' | 'soft' | 'reserve';

/** Watermarks as shares of the budget. */
export interface Watermarks {
  /** Share used from which cheap cruft is compacted (default 0.60). */
  readonly softWatermark: number;
  /** Share kept free (default 0.15): below it, plan back to reserve + hysteresis. */
  readonly reserveRatio: number;
}

/** The zone a headroom snapshot falls in. */
export function zoneOf(h: Pick<HeadroomSnapshot, 'headroom'>, w: Watermarks): Zone {
  const used = 1 - h.headroom;
  if (h.headroom < w.reserveRatio) return 'reserve';
  if (used >= w.softWatermark) return 'soft';
  return 'ok';
}

/** Why a headroom sample is logged, or undefined when it need not be (moved < 1 point, same zone). */
export function headroomLogReason(previous: { headroom: number; zone: Zone } | undefined, current: { headroom: number; zone: Zone }): string | undefined {
  if (!previous) return 'start';
  if (previous.zone !== current.zone) return `zone:${previous.zone}->${current.zone}`;
  if (Math.abs(previous.headroom - current.headroom) >= 0.01) return 'moved';
  return undefined;
}

/** A session the daemon is following: its model plus the bookkeeping of the compaction loop. */
export class LiveSession {
  lastLogged: { headroom: number; zone: Zone } | undefined;
  lastPlanAt = Number.NEGATIVE_INFINITY;
  /** Model version the last plan was made from: no re-plan until the session changes. */
  lastPlannedVersion = -1;
  planning: Promise<void> | undefined;
  planTimer: NodeJS.Timeout | undefined;
  lastEdit: { reason: string; at: number; planId: string } | undefined;
  lastActivityAt: number;
  /** Templates bootstrapped into this session (fed success counts on session.end). */
  readonly bootstrappedTemplates = new Set<string>();
  ended = false;
  /**
   * Set when an agent feeds this session's messages over the socket (`session.sync`) instead
   * of the daemon tailing a transcript: the ids of the last list fed, the model version they
   * produced, and the budget they were planned against (a longer list with the same prefix is
   * appended; anything else rebuilds the model).
   */
  fed: { ids: readonly string[]; version: number; budgetTokens: number | undefined } | undefined;
  /** Summaries of unchanged sections are reused across re-plans. */
  readonly summaryCache = new SummaryCache();

  constructor(
    readonly sessionId: string,
    readonly file: string,
    readonly format: TranscriptFormat,
    public model: SessionModel,
    now: number,
  ) {
    this.lastActivityAt = now;
  }
}

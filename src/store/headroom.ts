import type { Db } from './db.js';
import { wrapStoreError } from './db.js';

/** One row of the headroom log: why it was written and the numbers at that moment. */
export interface HeadroomSample {
  readonly sessionId: string;
  /** Epoch ms. */
  readonly at: number;
  readonly tokens: number;
  readonly total: number;
  readonly reserveRatio: number;
  readonly headroom: number;
  readonly sections: number;
  readonly reportedTokens?: number | undefined;
  /** 'moved' (≥ 1 point), 'soft' / 'reserve' (a watermark crossed), 'start', 'edit'. */
  readonly reason: string;
  readonly file?: string | undefined;
}

interface Row {
  session_id: string;
  at: number;
  tokens: number;
  total: number;
  reserve_ratio: number;
  headroom: number;
  sections: number;
  reported_tokens: number | null;
  reason: string;
  file: string | null;
}

/** Append-only headroom log per session. */
export class HeadroomLog {
  private readonly insert;
  private readonly select;

  constructor(private readonly db: Db) {
    this.insert = db.prepare(
      `INSERT INTO headroom_samples (session_id, at, tokens, total, reserve_ratio, headroom, sections, reported_tokens, reason, file)
       VALUES (@sessionId, @at, @tokens, @total, @reserveRatio, @headroom, @sections, @reportedTokens, @reason, @file)`,
    );
    this.select = db.prepare(
      `SELECT * FROM headroom_samples WHERE session_id = ? AND at >= ? ORDER BY at, id`,
    );
  }

  record(sample: HeadroomSample): void {
    try {
      this.insert.run({ ...sample, reportedTokens: sample.reportedTokens ?? null, file: sample.file ?? null });
    } catch (err) {
      throw wrapStoreError(err, 'cannot record headroom sample');
    }
  }

  /** Samples of one session since `sinceMs` (default: all), oldest first. */
  list(sessionId: string, sinceMs = 0): HeadroomSample[] {
    return (this.select.all(sessionId, sinceMs) as Row[]).map((r) => ({
      sessionId: r.session_id,
      at: r.at,
      tokens: r.tokens,
      total: r.total,
      reserveRatio: r.reserve_ratio,
      headroom: r.headroom,
      sections: r.sections,
      reportedTokens: r.reported_tokens ?? undefined,
      reason: r.reason,
      file: r.file ?? undefined,
    }));
  }

  /** Session ids with at least one sample, newest activity first. */
  sessions(): { sessionId: string; lastAt: number; samples: number }[] {
    return this.db
      .prepare(`SELECT session_id AS sessionId, MAX(at) AS lastAt, COUNT(*) AS samples FROM headroom_samples GROUP BY session_id ORDER BY lastAt DESC`)
      .all() as { sessionId: string; lastAt: number; samples: number }[];
  }
}

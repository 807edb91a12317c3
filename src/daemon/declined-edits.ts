import type { Zone } from './lifecycle.js';

/** How long sections an agent declined stay out of its automatic plans (default of DeclinedEdits). */
export const DECLINED_EDIT_COOLDOWN_MS = 10 * 60_000;

/** What a record whose model was released is bound to: no model is it, so only `carry` takes the record over. */
const DETACHED: object = Object.freeze({});

const ZONE_RANK: Readonly<Record<Zone, number>> = { ok: 0, soft: 1, reserve: 2 };

interface Declined {
  /** The sections the declined edit replaces. */
  readonly sectionIds: readonly string[];
  /** When the agent declined it (the cooldown runs from here). */
  readonly at: number;
  /** The zone the session was in then: a worse zone asks again. */
  readonly zone: Zone;
  /** The session's headroom then (share of the window free): a fall of more than half the reserve asks again. */
  readonly headroom: number;
}

/** Where the session stands when an edit is declined, or an automatic plan is made. */
export interface DeclineState {
  readonly zone: Zone;
  /** Share of the window free (may be ≤ 0 once the window is full). */
  readonly headroom: number;
}

/** What an automatic plan leaves alone: sections, and the size the agent chose to keep. */
export interface DeclinedSet {
  readonly sectionIds: ReadonlySet<string>;
  /** The model's token count when the agent last declined: the plan compacts only what grew past it. */
  readonly keepTokens: number;
}

/**
 * The edits of one session model the agent declined (`compaction.ack` with `applied: false`,
 * or the edits left out of a partial apply). Automatic plans leave their sections alone, and
 * do not make up for them by compacting other sections harder: the size the context had when
 * the agent declined is taken as kept, so a plan covers only what grew since. That holds until the
 * session's zone gets worse than it was when they were declined, its headroom falls by more than
 * half the reserve since then or reaches 0 (the window is full: a hold made in the reserve, the
 * worst zone, would otherwise last the whole cooldown while only growth past the kept size is
 * compacted), or the cooldown passes; then they are proposed again. Without this, every re-plan after an append proposed the declined
 * edits once more (their summaries, archive relinks and push with them), so plans grew with
 * each append while the agent kept saying no.
 *
 * Section ids name sections of one model only: the record is bound to that model object, and a
 * rebuilt model (new ids) starts with none declined; a model released from memory and rebuilt to
 * the same sections takes the record over (`carry`).
 */
export class DeclinedEdits {
  private model: object | undefined;
  private readonly edits = new Map<string, Declined>();
  private keepTokens = 0;

  constructor(private readonly cooldownMs = DECLINED_EDIT_COOLDOWN_MS) {}

  /**
   * The agent declined `edits` of `model` at `at`, in `state`, keeping a context of `keepTokens`
   * (an edit declined again restarts its cooldown).
   */
  decline(model: object, edits: readonly { readonly editId: string; readonly replaces: readonly string[] }[], keepTokens: number, state: DeclineState, at: number): void {
    this.bind(model);
    for (const e of edits) this.edits.set(e.editId, { sectionIds: e.replaces, at, zone: state.zone, headroom: state.headroom });
    this.keepTokens = keepTokens;
  }

  /**
   * What an automatic plan of `model` made now, in `state`, leaves alone (undefined when
   * nothing). Edits past their cooldown, declined in a better zone than `state.zone`, or with
   * headroom since fallen by more than `reserveRatio / 2` or to 0, are forgotten here.
   */
  held(model: object, state: DeclineState, reserveRatio: number, now: number): DeclinedSet | undefined {
    this.bind(model);
    if (this.edits.size === 0) return undefined;
    const sectionIds = new Set<string>();
    const full = state.headroom <= 0;
    for (const [id, d] of this.edits) {
      if (full || now - d.at >= this.cooldownMs || ZONE_RANK[state.zone] > ZONE_RANK[d.zone] || d.headroom - state.headroom > reserveRatio / 2) this.edits.delete(id);
      else for (const s of d.sectionIds) sectionIds.add(s);
    }
    return sectionIds.size > 0 ? { sectionIds, keepTokens: this.keepTokens } : undefined;
  }

  /** How many declined edits are held now. */
  get size(): number {
    return this.edits.size;
  }

  /** `model` has the sections of the model the record was bound to (a faithful rebuild after a release): it keeps the record. */
  carry(model: object): void {
    this.model = model;
  }

  /**
   * The bound model left memory (released): the record stays, for `carry` to hand to a faithful
   * rebuild, but no longer holds that model (and all it references) alive.
   */
  detach(): void {
    if (this.model !== undefined) this.model = DETACHED;
  }

  private bind(model: object): void {
    if (this.model === model) return;
    this.model = model;
    this.edits.clear();
  }
}

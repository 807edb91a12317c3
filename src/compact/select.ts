/**
 * Edit selection: synchronous and deterministic. Every compactable section is a unit with a
 * reason (the first cruft detector that named it, else `low-score`) and a cost:
 *
 *   cost = discount(reason) × score × tokens / saved,   saved = tokens − estimated summary tokens
 *
 * i.e. the value lost (score × tokens, discounted when a detector shows the content is
 * redundant, stale, a trace or an abandoned path) per token saved. Units are taken cheapest
 * first (ties: older first) until the target is met; sections of the newest turn are only
 * taken when older ones do not suffice. Adjacent selected sections with the same reason
 * merge into one edit (one summary); pointer reasons (redundant-tool-output, stale-read,
 * verbose-error-trace) stay one edit per section. A section that a chosen summary points at
 * ("a later identical call …") is left in view while other units meet the target; when it must
 * go, the summaries pointing at it stand alone instead (pointers.ts).
 */
import type { Section } from '../model/types.js';
import { isCompactable } from './detectors/util.js';
import type { Candidate, EditReason, Unit } from './types.js';
import { keepPointersTrue, PointerGuard, withLiveTargets, type AppliedPointer } from './pointers.js';

/** Share of a section's value lost when a detector shows it is cruft (lower compacts first). */
export const REASON_DISCOUNT: Readonly<Record<EditReason, number>> = {
  'redundant-tool-output': 0.1,
  'stale-read': 0.15,
  'verbose-error-trace': 0.3,
  'superseded-reasoning': 0.35,
  'low-score': 1,
};

/** Summaries never get fewer tokens than this (header + handle + a few facts). */
export const MIN_SUMMARY_TOKENS = 48;
/** Nor more than this per edit. */
export const MAX_SUMMARY_TOKENS = 1_500;

const POINTER_REASONS = new Set<EditReason>(['redundant-tool-output', 'stale-read', 'verbose-error-trace']);

export interface SelectedRun {
  readonly sections: readonly Section[];
  readonly reason: EditReason;
  readonly detail: Readonly<Record<string, unknown>>;
  readonly tokensBefore: number;
  /** Summary budget (tokens) for this run. */
  readonly summaryTokens: number;
  /**
   * A pointer summary's sections in view that its claim rests on (pointers.ts): the plan
   * must not stand once one of them left the context.
   */
  readonly reliesOn?: readonly string[];
}

/** Estimated summary size of `tokens` tokens of originals at compression ratio `ratio`. */
export function summaryBudget(tokens: number, ratio: number, reason: EditReason): number {
  const base = POINTER_REASONS.has(reason) ? Math.min(tokens * ratio, 160) : tokens * ratio;
  return Math.round(Math.min(MAX_SUMMARY_TOKENS, Math.max(MIN_SUMMARY_TOKENS, base)));
}

/**
 * Units from candidates: the first candidate naming a section wins; others fall to low-score.
 * A unit pointing at a section not among `sections` (already replaced) stands alone.
 */
export function buildUnits(sections: readonly Section[], candidates: readonly Candidate[], cruftOnly: boolean): Unit[] {
  const byId = new Map<string, { reason: EditReason; detail: Readonly<Record<string, unknown>>; group: number }>();
  candidates.forEach((c, gi) => {
    for (const id of c.sectionIds) if (!byId.has(id) && c.reason !== 'low-score') byId.set(id, { reason: c.reason, detail: c.detail, group: gi + 1 });
  });
  const units: Unit[] = [];
  sections.forEach((s, index) => {
    if (!isCompactable(s)) return;
    const c = byId.get(s.id);
    if (c) units.push({ section: s, index, ...c });
    else if (!cruftOnly) units.push({ section: s, index, reason: 'low-score', detail: { score: s.score }, group: 0 });
  });
  return withLiveTargets(units, sections);
}

/**
 * A run whose summary would exceed MAX_SUMMARY_TOKENS is cut into nearly equal pieces (whole
 * sections), so a long conversation becomes a few span summaries each within the cap instead
 * of one squeezed far below its share.
 */
function splitLong(run: Unit[], ratio: number): Unit[][] {
  const tokens = run.reduce((n, u) => n + u.section.tokens, 0);
  const pieces = Math.ceil((tokens * ratio) / MAX_SUMMARY_TOKENS);
  if (pieces <= 1 || run.length < 2) return [run];
  const size = tokens / pieces;
  const out: Unit[][] = [[]];
  let acc = 0;
  for (const u of run) {
    const cur = out[out.length - 1] as Unit[];
    if (cur.length > 0 && acc + u.section.tokens / 2 > size * out.length && out.length < pieces) out.push([u]);
    else cur.push(u);
    acc += u.section.tokens;
  }
  return out;
}

/** Section kinds whose runs become span summaries (see summarize/span.ts). */
export const CONVERSATIONAL_KINDS: ReadonlySet<string> = new Set(['user-instruction', 'user-message', 'assistant-text']);

/**
 * Tokens a unit saves. A conversational turn joins its neighbours in one span summary, so it
 * costs its share of that summary (no per-edit minimum): a chat of many short turns compacts.
 */
function unitSaving(u: Unit, ratio: number): number {
  if (u.reason === 'low-score' && CONVERSATIONAL_KINDS.has(u.section.kind)) return u.section.tokens * (1 - ratio);
  return u.section.tokens - summaryBudget(u.section.tokens, ratio, u.reason);
}

/** Value lost per token saved. */
export function unitCost(u: Unit, ratio: number): number {
  const saved = unitSaving(u, ratio);
  if (saved <= 0) return Number.POSITIVE_INFINITY;
  return (REASON_DISCOUNT[u.reason] * Math.max(u.section.score, 1e-6) * u.section.tokens) / saved;
}

export interface SelectOptions {
  /** Tokens to save (before summaries are counted back in). */
  readonly needTokens: number;
  /** Summary compression ratio (summary tokens / original tokens). */
  readonly ratio: number;
  /** Max tokens of one edit's originals in soft mode ("small edits"); undefined = no cap. */
  readonly maxEditTokens?: number;
  /** Under pressure: merge every adjacent chosen section, whatever its reason (fewer summary headers). */
  readonly mergeAll?: boolean;
  /**
   * Sections a chosen summary points at stay unselected even when the rest falls short of
   * `needTokens` (a first round: summary estimates run high, the rest often suffices).
   * Otherwise they are kept only while the rest suffices.
   */
  readonly keepPointedAt?: boolean;
  /**
   * Pointer summaries already in the context (`appliedPointers`): what they rest on stays in
   * view, or is replaced by a pointer summary carrying their claim on, whatever the target.
   */
  readonly applied?: readonly AppliedPointer[];
}

/** Pick units and merge them into runs. Deterministic for the same input. */
export function selectRuns(units: readonly Unit[], opts: SelectOptions): SelectedRun[] {
  const guard = new PointerGuard(units, opts.applied);
  const chosen = pickUnits(units, opts, guard);
  rideAlong(units, chosen, opts, guard);
  const { units: kept, reliesOn } = keepPointersTrue([...chosen.values()].sort((a, b) => a.index - b.index));
  // A pointer carrying an applied summary's claim on stays one (its basis names what the claim
  // rests on now): never merged into a span summary, nor taken when it cannot stay one — unless
  // the applied summaries resting on it are taken too (their claims leave with them).
  let carried = kept;
  for (let n = -1; n !== carried.length; ) {
    n = carried.length;
    const ids = new Set(carried.map((u) => u.section.id));
    carried = carried.filter((u) => !guard.heldByApplied(u) || reliesOn.has(u.section.id) || guard.freed(u, ids));
  }
  const ids = new Set(carried.map((u) => u.section.id));
  return mergeRuns(carried, opts, (u) => guard.heldByApplied(u) && !guard.freed(u, ids)).map((run) => toRun(run, opts, reliesOn));
}

/**
 * Units taken cheapest first until `needTokens` are saved, by section id. Sections a chosen
 * summary points at are passed over (kept in view) while the others suffice (or
 * `keepPointedAt`); else the plain cheapest-first pick is taken, and pointers that would lie
 * stand alone (`keepPointersTrue`) — but for what applied summaries rest on, never taken then.
 */
function pickUnits(units: readonly Unit[], opts: SelectOptions, guard: PointerGuard): Map<string, Unit> {
  const newestTurn = units.reduce((t, u) => Math.max(t, u.section.recency.turn), 0);
  const ranked = units
    .map((u) => ({ u, cost: unitCost(u, opts.ratio), recent: u.section.recency.turn >= newestTurn }))
    .filter((x) => Number.isFinite(x.cost) && (opts.maxEditTokens === undefined || x.u.section.tokens <= opts.maxEditTokens))
    .sort((a, b) => Number(a.recent) - Number(b.recent) || a.cost - b.cost || a.u.index - b.u.index)
    .map((x) => x.u);
  const guarded = cheapestFirst(ranked, opts, guard);
  if (guarded.saved >= opts.needTokens || opts.keepPointedAt === true) return guarded.chosen;
  return cheapestWithHolders(ranked, new Map(units.map((u) => [u.section.id, u] as const)), opts, guard);
}

/**
 * The plain cheapest-first pick (pointers that would lie stand alone afterwards), except that a
 * section an applied summary rests on is taken only together with that summary (and those its
 * claim passes through: `bundleOf`, among all `units`: a pointer summary saves next to nothing
 * and is never ranked on its own), so no applied claim is left pointing at nothing.
 */
function cheapestWithHolders(ranked: readonly Unit[], units: ReadonlyMap<string, Unit>, opts: SelectOptions, guard: PointerGuard): Map<string, Unit> {
  const chosen = new Map<string, Unit>();
  let saved = 0;
  for (const u of ranked) {
    if (saved >= opts.needTokens) break;
    if (chosen.has(u.section.id)) continue;
    const bundle = guard.heldByApplied(u) ? guard.bundleOf(u, units) : [u];
    for (const b of bundle ?? []) {
      if (chosen.has(b.section.id)) continue;
      chosen.set(b.section.id, b);
      saved += unitSaving(b, opts.ratio);
    }
  }
  return chosen;
}

/** Ranked units taken in order until `needTokens` are saved; with a guard, those that would make a chosen summary lie are skipped. */
function cheapestFirst(ranked: readonly Unit[], opts: SelectOptions, guard?: PointerGuard): { chosen: Map<string, Unit>; saved: number } {
  const chosen = new Map<string, Unit>();
  let saved = 0;
  for (const u of ranked) {
    if (saved >= opts.needTokens) break;
    if (guard?.conflicts(u, chosen)) continue;
    chosen.set(u.section.id, u);
    saved += unitSaving(u, opts.ratio);
  }
  return { chosen, saved };
}

/** Small low-score sections next to a chosen low-score run ride along (too small alone), unless a chosen summary points at them. */
function rideAlong(units: readonly Unit[], chosen: Map<string, Unit>, opts: SelectOptions, guard: PointerGuard): void {
  const chosenIdx = new Set([...chosen.values()].filter((u) => u.reason === 'low-score').map((u) => u.index));
  for (const pass of [1, -1]) {
    const ordered = [...units].sort((a, b) => pass * (a.index - b.index));
    for (const u of ordered) {
      if (u.reason !== 'low-score' || chosenIdx.has(u.index) || u.section.tokens >= 2 * MIN_SUMMARY_TOKENS) continue;
      if (opts.maxEditTokens !== undefined && u.section.tokens > opts.maxEditTokens) continue;
      if (chosenIdx.has(u.index - pass) && !guard.pinned(u, chosen)) {
        chosenIdx.add(u.index);
        chosen.set(u.section.id, u);
      }
    }
  }
}

/** Chosen units (in order) merged into runs of adjacent sections, long runs split. */
function mergeRuns(chosen: readonly Unit[], opts: SelectOptions, alone: (u: Unit) => boolean): Unit[][] {
  const runs: Unit[][] = [];
  for (const u of chosen) {
    const last = runs[runs.length - 1];
    const prev = last?.[last.length - 1];
    const mergeable =
      prev !== undefined &&
      prev.index === u.index - 1 &&
      !alone(u) &&
      !alone(prev) &&
      (opts.mergeAll === true || (prev.reason === u.reason && !POINTER_REASONS.has(u.reason) && prev.group === u.group));
    if (last && mergeable) last.push(u);
    else runs.push([u]);
  }
  return runs.flatMap((run) => splitLong(run, opts.ratio));
}

function toRun(run: readonly Unit[], opts: SelectOptions, reliesOn: ReadonlyMap<string, readonly string[]>): SelectedRun {
  const first = run[0] as Unit;
  const tokensBefore = run.reduce((n, u) => n + u.section.tokens, 0);
  const mixed = run.some((u) => u.reason !== first.reason || u.group !== first.group);
  // a merged run is summarized as low-score: it points at nothing
  const relied = mixed ? [] : [...new Set(run.flatMap((u) => reliesOn.get(u.section.id) ?? []))];
  return {
    sections: run.map((u) => u.section),
    reason: mixed ? 'low-score' : first.reason,
    detail: mixed ? { merged: run.map((u) => u.reason) } : first.detail,
    tokensBefore,
    summaryTokens: summaryBudget(tokensBefore, opts.ratio, mixed ? 'low-score' : first.reason),
    ...(relied.length > 0 ? { reliesOn: relied } : {}),
  };
}

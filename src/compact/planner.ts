/**
 * The planner: from a session model to a compaction plan (design §5). Selection is sync and
 * deterministic (see select.ts); only summarizing is async. After summarizing, every edit's
 * summary passes the survival check (survival.ts). Plans are data; `applyPlan` hands accepted
 * edits to the model.
 */
import type { Logger } from '../util/logger.js';
import { ContextdError, ErrorCode } from '../util/errors.js';
import type { Message, PointerBasis } from '../model/messages.js';
import type { ReplacementSummary } from '../model/session.js';
import { createTokenCounter, MESSAGE_OVERHEAD_TOKENS, type TokenCounter } from '../model/tokens.js';
import type { ScoreFactors, Section } from '../model/types.js';
import { CRUFT_DETECTORS, runDetectors } from './detectors/index.js';
import { textOf } from './detectors/util.js';
import { messageTerms, ReferenceIndex } from './keyterms.js';
import { buildUnits, CONVERSATIONAL_KINDS, REASON_DISCOUNT, selectRuns, type SelectedRun } from './select.js';
import { createExtractiveSummarizer } from './summarize/extractive.js';
import { isConversational } from './summarize/span.js';
import { isStandingConstraint } from '../model/classify.js';
import { ensureSurvival, keyFacts } from './survival.js';
import { BoundedMemo, memoList, memoMessage } from './memo.js';
import { appliedPointers, breaksApplied, POINTER_FIELDS, pointerBasis, sectionsByKey, type AppliedPointer } from './pointers.js';
import { fnv1a64, contentTerms } from '../text/index.js';
import type { Candidate, CompactableModel, DetectorContext, Edit, EditableModel, Plan, PlanMode, Summarizer, SurvivalReport, Unit } from './types.js';

export const DEFAULT_SOFT_WATERMARK = 0.6;
export const DEFAULT_HYSTERESIS = 0.1;
/** At most this many selection rounds (each re-selects with more savings when summaries overshoot). */
const MAX_ROUNDS = 4;
const SUMMARIZE_CONCURRENCY = 4;
/** Longer summaries bought with a plan's slack get budgets in steps of this many tokens. */
const SLACK_BUDGET_STEP = 32;

export interface PlanOptions {
  readonly mode: PlanMode;
  /** Manual mode: headroom to reach (default reserve + hysteresis). */
  readonly targetHeadroom?: number;
  /** Manual mode alternative: token count to reach (wins over targetHeadroom). */
  readonly targetTokens?: number;
  /** Soft mode: share of the window used from which cruft is compacted (default 0.60). */
  readonly softWatermark?: number;
  /** Default: the model's budget reserveRatio. */
  readonly reserveRatio?: number;
  /** Default 0.10. */
  readonly hysteresis?: number;
  /** Default: the extractive summarizer. */
  readonly summarizer?: Summarizer;
  /** Clock for `createdAt` (default Date.now). */
  readonly now?: () => number;
  /** Prefix of edit ids (default `e_`). */
  readonly idPrefix?: string;
  /** Counts summary tokens (default o200k_base; use the model's counter). */
  readonly tokenCounter?: TokenCounter;
  /** Reuse summaries across re-plans (same sections, budget and key terms). */
  readonly cache?: SummaryCache;
  readonly signal?: AbortSignal;
  readonly logger?: Logger;
  /**
   * Called between the plan's steps (scoring, each detector, the reference index, each edit's
   * summary): a caller that returns a promise is waited for, so a daemon can yield the event
   * loop there once a step ran past its time slice. The model may grow while the plan waits
   * (appended lines); the plan keeps to the sections it read at the start.
   */
  readonly pause?: () => Promise<void> | undefined;
  /**
   * Edits the agent declined (a daemon passes them to its automatic plans): their sections are
   * not replaced, and the size the context had when it declined (`keepTokens`, the model's own
   * count) is taken as kept — the target is at least that — so the plan covers only what grew
   * since and does not compact other sections harder in their place.
   */
  readonly declined?: { readonly sectionIds: ReadonlySet<string>; readonly keepTokens: number };
}

/**
 * A summary with what the planner derived from it: the text after the survival check, its
 * tokens and the facts it had to re-inject. Derived from the summary, the edit's messages,
 * its key terms and the goal's words — all named by the key it is stored under.
 */
export interface BuiltSummary {
  /** The summarizer's text. */
  readonly raw: string;
  /** The goal words and counter the rest was derived with (the summary key does not name them). */
  readonly derivedFor?: string;
  readonly content?: string;
  readonly tokens?: number;
  readonly checked?: number;
  readonly missing?: readonly string[];
}

/**
 * A bounded map of summaries by input key, so a re-plan after one appended line is cheap: an
 * edit whose inputs did not change is neither summarized, survival-checked nor counted again.
 *
 * Its owner ends each real plan (not a dry run) with `endPlan`, which drops the summaries the last few plans did not
 * use: a key names its messages, so once they are replaced (the edit applied) or its run changed,
 * it is never asked for again. Without it a session under load kept ~1,500 dead summaries and
 * their keys (~3 MiB for a 48k-token session: more heap than its model) up to the size bound.
 */
export class SummaryCache {
  private readonly map = new Map<string, { readonly built: BuiltSummary; plan: number }>();
  private plans = 0;
  constructor(private readonly maxEntries = 2_000) {}
  get(key: string): string | undefined {
    return this.built(key)?.raw;
  }
  set(key: string, value: string): void {
    this.put(key, { raw: value });
  }
  /** The summary under `key` with what was derived from it. */
  built(key: string): BuiltSummary | undefined {
    const hit = this.map.get(key);
    if (!hit) return undefined;
    hit.plan = this.plans;
    return hit.built;
  }
  put(key: string, value: BuiltSummary): void {
    if (!this.map.has(key) && this.map.size >= this.maxEntries) {
      const first = this.map.keys().next();
      if (!first.done) this.map.delete(first.value);
    }
    this.map.set(key, { built: value, plan: this.plans });
  }
  /**
   * A plan using this cache is over: summaries neither read nor stored by it or by the
   * `keepPlans - 1` plans before it are dropped.
   */
  endPlan(keepPlans = SUMMARY_CACHE_KEEP_PLANS): void {
    const oldest = this.plans - keepPlans + 1;
    for (const [key, entry] of this.map) if (entry.plan < oldest) this.map.delete(key);
    this.plans++;
  }
  get size(): number {
    return this.map.size;
  }
}

/** Plans a summary may go unused before `SummaryCache.endPlan` drops it. */
export const SUMMARY_CACHE_KEEP_PLANS = 8;

/**
 * The archive handle of the messages an edit replaces: `h_` + 16 hex of the session and the
 * messages' own ids (transcript uuids / byte offsets, plus tool-call ids), which survive a
 * daemon restart or a model rebuild — section ids restart at s1 and must not name originals,
 * or a later plan would overwrite what an earlier summary's handle points to.
 */
export function handleFor(sessionId: string, messages: readonly Message[]): string {
  const keys = messages.map((m) => (m.toolCalls && m.toolCalls.length > 0 ? `${m.id}:${m.toolCalls.map((c) => c.id).join('+')}` : m.id));
  return `h_${fnv1a64(`${sessionId}\u0000${keys.join(',')}`)}`;
}

/** Tokens the plan must reach, by mode. */
export function targetTokensFor(model: CompactableModel, o: PlanOptions): number {
  if (o.mode === 'manual' && o.targetTokens !== undefined) return Math.floor(o.targetTokens);
  return toCountedTokens(model, watermarkTarget(model, o));
}

/**
 * The size an automatic plan leaves the context at, at least, for edits the agent declined
 * (`declined.keepTokens`), clamped below the window: a size kept from a larger window (the agent
 * switched models) never puts the target at or past the one it has now — at most
 * `total × (1 − reserveRatio / 2)`, half the reserve still free.
 */
function keptTokens(model: CompactableModel, o: PlanOptions): number {
  if (!o.declined) return 0;
  const b = model.budget();
  const ceiling = toCountedTokens(model, Math.floor(b.total * (1 - (o.reserveRatio ?? b.reserveRatio) / 2)));
  return Math.min(o.declined.keepTokens, ceiling);
}

/**
 * Watermarks are shares of the agent's real window, so a target is converted from the
 * calibrated space (what the agent reports) to the model's own count, which edits reduce.
 */
export function toCountedTokens(model: CompactableModel, calibrated: number): number {
  const c = model.calibration?.();
  if (!c || c.samples === 0) return calibrated;
  return Math.floor((calibrated - c.offsetTokens) / c.ratio);
}

/**
 * The target of compacting to a context window of `budgetTokens` with `reserveRatio` kept
 * free, in the agent's terms (`target`, what inspect and headroom count) and in the model's
 * own count (`countedTarget`, what edits reduce). `contextd compact`, `contextd fork` and the
 * daemon budget against this one conversion.
 */
export function compactionTarget(model: CompactableModel, budgetTokens: number, reserveRatio: number): { target: number; countedTarget: number } {
  const target = Math.floor(budgetTokens * (1 - reserveRatio));
  return { target, countedTarget: Math.max(0, toCountedTokens(model, target)) };
}

/** The calibrated size of a context whose own count is `counted`. */
export function toCalibratedTokens(model: CompactableModel, counted: number): number {
  const c = model.calibration?.();
  if (!c || c.samples === 0) return counted;
  return Math.max(0, Math.round(c.offsetTokens + c.ratio * counted));
}

function watermarkTarget(model: CompactableModel, o: PlanOptions): number {
  const b = model.budget();
  const reserve = o.reserveRatio ?? b.reserveRatio;
  const hyst = o.hysteresis ?? DEFAULT_HYSTERESIS;
  switch (o.mode) {
    case 'reserve':
      return Math.floor(b.total * (1 - Math.min(0.95, reserve + hyst)));
    case 'soft':
      return Math.floor(b.total * (o.softWatermark ?? DEFAULT_SOFT_WATERMARK));
    case 'manual':
      if (o.targetTokens !== undefined) return Math.floor(o.targetTokens);
      return Math.floor(b.total * (1 - (o.targetHeadroom ?? Math.min(0.95, reserve + hyst))));
  }
}

function sessionIdOf(model: CompactableModel): string {
  const s = model.sections()[0];
  return (model as { sessionId?: string }).sessionId ?? s?.sessionId ?? 'session';
}

/** Build a detector context over a model. */
export function detectorContext(model: CompactableModel): DetectorContext {
  return { sections: model.sections(), messagesOf: (id) => model.messagesOf(id), goal: model.goal().text };
}

/**
 * The edits' originals as they were summarized, by section (an internal side map: a plan is
 * data sent to agents and stored, and must not carry them).
 */
const summarizedOriginals = new WeakMap<Edit, ReadonlyMap<string, readonly Message[]>>();

/**
 * Why `edits` (applied together) would make a pointer summary false, or undefined when none:
 * a section an edit's own summary rests on (`Edit.pointer`) left the context or is replaced
 * with it, or one an applied summary rests on is replaced other than by a pointer carrying
 * its claim on (`breaksApplied`).
 */
function lostPointer(model: Pick<CompactableModel, 'sections' | 'messagesOf'>, edits: readonly Edit[]): { readonly why: string; readonly editId?: string; readonly sectionId?: string } | undefined {
  if (edits.length === 0) return undefined;
  const sections = model.sections();
  const replaced = new Set(edits.flatMap((e) => e.replaces));
  for (const e of edits) {
    if (!e.pointer) continue;
    const ids = sectionsByKey(sections, e.pointer.reliesOn);
    if (!ids) return { why: 'a section a summary points at is no longer in view', editId: e.editId };
    const gone = ids.find((id) => replaced.has(id));
    if (gone !== undefined) return { why: `section ${gone}, which a summary points at, is replaced with it`, editId: e.editId, sectionId: gone };
  }
  const lost = breaksApplied(appliedPointers(sections, (id) => model.messagesOf(id)), edits);
  return lost === undefined ? undefined : { why: `section ${lost}, which an applied summary points at, would leave the context`, sectionId: lost };
}

/**
 * The originals an edit of `planCompaction` summarized and its handle names, by section: what
 * to archive under the handle (the model may have moved on since). Undefined for an edit the
 * planner did not make in this process.
 */
export function originalsOf(edit: Edit): Pick<CompactableModel, 'messagesOf'> | undefined {
  const bySection = summarizedOriginals.get(edit);
  return bySection ? { messagesOf: (id) => bySection.get(id) ?? [] } : undefined;
}

/**
 * `plan` as it stands in `model` now, or undefined when it must not be applied: a section an
 * edit replaces left the context, or holds other messages than the edit summarized (for an
 * edit made elsewhere: none), or a section a summary points at left it. Sections that still stand keep the plan; message ranges are
 * rebased to where they stand now (the same plan when nothing moved). The one check of a
 * plan made while the context moved under it (truncated tail, reset, another edit applied).
 */
export function planStanding(model: Pick<CompactableModel, 'section' | 'sections' | 'messagesOf'>, plan: Plan): Plan | undefined {
  let moved = false;
  const edits: Edit[] = [];
  if (lostPointer(model, plan.edits) !== undefined) return undefined;
  for (const e of plan.edits) {
    const originals = summarizedOriginals.get(e);
    let start = Number.POSITIVE_INFINITY;
    let end = Number.NEGATIVE_INFINITY;
    for (const id of e.replaces) {
      const section = model.section(id);
      const now = model.messagesOf(id);
      if (!section || section.anchor || section.pending || now.length === 0) return undefined;
      const then = originals?.get(id);
      if (then && !sameMessages(then, now)) return undefined;
      start = Math.min(start, section.messageRange.start);
      end = Math.max(end, section.messageRange.end);
    }
    if (start === e.messageRange.start && end === e.messageRange.end) {
      edits.push(e);
      continue;
    }
    moved = true;
    const rebased: Edit = { ...e, messageRange: { start, end } };
    if (originals) summarizedOriginals.set(rebased, originals);
    edits.push(rebased);
  }
  return moved ? { ...plan, edits } : plan;
}

function sameMessages(a: readonly Message[], b: readonly Message[]): boolean {
  return a.length === b.length && a.every((m, i) => m === b[i] || (m.id === b[i]?.id && m.text === b[i]?.text));
}

function planExpired(sessionId: string, why: string): ContextdError {
  return new ContextdError(ErrorCode.PLAN_EXPIRED, `the plan of session "${sessionId}" is stale: ${why} while it was made`, { sessionId });
}

/**
 * Plan compaction of `model` per `options`. Never mutates the model. Throws PLAN_EXPIRED when a
 * section an edit replaces left the model or changed while the plan paused (`planStanding`);
 * sections leaving elsewhere (a truncated tail) only rebase its message ranges.
 */
export async function planCompaction(model: CompactableModel, options: PlanOptions): Promise<Plan> {
  const log = options.logger?.child({ component: 'compact' });
  const counter = options.tokenCounter ?? createTokenCounter();
  const summarizer = options.summarizer ?? createExtractiveSummarizer();
  const sessionId = sessionIdOf(model);
  const total = model.budget().total;
  const tokensBefore = model.tokens();
  const target = Math.max(targetTokensFor(model, options), keptTokens(model, options));
  const modelVersion = model.version;
  const createdAt = (options.now ?? Date.now)();
  const planId = `p_${fnv1a64(`${sessionId}|${modelVersion}|${options.mode}|${target}|${createdAt}`)}`;
  const headroomBefore = 1 - toCalibratedTokens(model, tokensBefore) / total;
  const empty: Plan = {
    planId,
    sessionId,
    createdAt,
    mode: options.mode,
    headroomBefore,
    headroomAfter: headroomBefore,
    tokensBefore,
    tokensAfter: tokensBefore,
    calibratedTokensBefore: toCalibratedTokens(model, tokensBefore),
    calibratedTokensAfter: toCalibratedTokens(model, tokensBefore),
    edits: [],
    survival: { checked: 0, missing: [], reinjected: 0 },
    modelVersion,
  };
  if (tokensBefore <= target) return empty;
  // Read in the same step as the numbers above: the sections the plan selects from are those
  // tokensBefore and modelVersion describe.
  const ctx = detectorContext(model);
  const epoch = model.epoch;
  // Sections may leave the model while it pauses (a socket-fed session truncates its tail on
  // most requests): an edit reads its sections when it is built and stops the plan if one left
  // (no summaries of nothing); what it replaced is checked again at the end.
  const pause = (): Promise<void> | undefined => options.pause?.();
  const candidates: Candidate[] = [];
  for (const d of CRUFT_DETECTORS) {
    await pause();
    candidates.push(...runDetectors(ctx, [d]));
  }
  await pause();
  const declined = options.declined?.sectionIds;
  const all = buildUnits(ctx.sections, candidates, options.mode === 'soft');
  // pointer summaries applied before: what they rest on stays in view (pointers.ts)
  const applied = appliedPointers(ctx.sections, ctx.messagesOf);
  const units = declined && declined.size > 0 ? all.filter((u) => !declined.has(u.section.id)) : all;
  if (units.length === 0) return empty;
  await pause();
  const refs = ReferenceIndex.of(model, model.messages(), ctx.goal);
  // One signal for every summarizer call of this plan: aborted when the plan fails or is
  // abandoned (or `options.signal` aborts), so no call outlives it.
  const calls = new AbortController();
  const outer = options.signal;
  const onAbort = (): void => calls.abort(outer?.reason);
  if (outer?.aborted) onAbort();
  else outer?.addEventListener('abort', onAbort, { once: true });
  try {
    const plan = await planUnits(model, { ...options, pause, signal: calls.signal }, { empty, units, refs, sessionId, summarizer, counter, tokensBefore, target, total, goal: ctx.goal, log, abort: (why) => calls.abort(why), applied, messageIds: new Map(ctx.sections.map((x) => [x.id, x.messageIds] as const)) });
    if (model.epoch === epoch) return plan;
    // a summarizer's answer awaited last
    const standing = planStanding(model, plan);
    if (!standing) throw planExpired(sessionId, 'a section it replaces left the context or changed');
    return standing;
  } finally {
    outer?.removeEventListener('abort', onAbort);
    if (!calls.signal.aborted) calls.abort(planExpired(sessionId, 'the plan ended'));
    refs.release();
  }
}

interface PlanState {
  readonly empty: Plan;
  readonly units: readonly Unit[];
  readonly refs: ReferenceIndex;
  readonly sessionId: string;
  readonly summarizer: Summarizer;
  readonly counter: TokenCounter;
  readonly tokensBefore: number;
  readonly target: number;
  readonly total: number;
  readonly goal: string;
  readonly log: Logger | undefined;
  /** Abort every summarizer call of the plan still running (one failed: the plan is given up). */
  readonly abort: (why: unknown) => void;
  /** Pointer summaries applied before, with what they rest on (`appliedPointers`). */
  readonly applied: readonly AppliedPointer[];
  /** Message ids of the sections the plan read, by section id. */
  readonly messageIds: ReadonlyMap<string, readonly string[]>;
}

/** Selection rounds, summaries and the survival check over the detected units. */
async function planUnits(model: CompactableModel, options: PlanOptions, st: PlanState): Promise<Plan> {
  const { empty, units, refs, sessionId, summarizer, counter, tokensBefore, target, total, log } = st;
  const { planId } = empty;
  const compactable = units.reduce((n, u) => n + u.section.tokens, 0);
  const need = tokensBefore - target;
  // Summaries of tool work pick a few facts (fixed size); span summaries of conversation render
  // every line compressed, so their size follows the originals: the more of the compactable
  // text is conversation, the larger the starting ratio.
  const chat = units.reduce((n, u) => n + (CONVERSATIONAL_KINDS.has(u.section.kind) ? u.section.tokens : 0), 0) / Math.max(1, compactable);
  let ratio = compactable > need ? Math.min(0.2 + 0.15 * chat, Math.max(0.03, ((compactable - need) / compactable) * (0.5 + 0.4 * chat))) : 0.03;
  let extra = 0;
  let records: EditRecord[] = [];
  const b: BuildContext = { sessionId, summarizer, counter, refs, goal: st.goal, cache: options.cache, signal: options.signal, abort: st.abort, idPrefix: options.idPrefix ?? 'e_', pause: options.pause, messageIds: st.messageIds, applied: st.applied };
  // Each round selects more (or merges harder, last) when the summaries overshot; the round
  // that meets the target — else the one saving most — wins.
  for (let round = 0; round < MAX_ROUNDS; round++) {
    await options.pause?.();
    // The first round keeps what summaries point at in view, whatever its estimate says; soft
    // mode always does (a pointer made to stand alone would be a low-score edit).
    const runs = selectRuns(units, { needTokens: need + extra, ratio, mergeAll: options.mode !== 'soft' && round === MAX_ROUNDS - 1, keepPointedAt: round === 0 || options.mode === 'soft', applied: st.applied });
    const built = keepAppliedTrue(await buildEdits(model, runs, b), st.applied);
    if (round === 0 || savedBy(built) > savedBy(records)) records = built;
    const after = tokensBefore - savedBy(built);
    const covered = runs.reduce((n, r) => n + r.sections.length, 0);
    if (after <= target) {
      records = built;
      break;
    }
    if (covered >= units.length && round < MAX_ROUNDS - 2) round = MAX_ROUNDS - 2; // only merging can help now
    extra += after - target;
    ratio = Math.max(0.02, ratio * 0.6);
  }
  // Slack goes to longer summaries first (facts kept across the whole span), then whatever
  // is still over-saved gives back whole edits.
  records = await spendSlack(model, records, tokensBefore - target, b);
  records = giveBack(records, tokensBefore - target, units, st.applied);
  // only the plan's own edits name their originals (not those of rounds given up)
  for (const r of records) summarizedOriginals.set(r.edit, r.originals);
  const edits = records.map((r) => r.edit);
  const survival: SurvivalReport = {
    checked: records.reduce((n, r) => n + r.checked, 0),
    missing: records.flatMap((r) => r.missing.map((fact) => ({ editId: r.edit.editId, fact }))),
    reinjected: records.reduce((n, r) => n + r.missing.length, 0),
  };
  const tokensAfter = tokensBefore - savedBy(records);
  for (const e of edits) log?.debug({ planId, editId: e.editId, reason: e.reason, replaces: e.replaces, tokensBefore: e.tokensBefore, tokensAfter: e.tokensAfter, scores: e.scores }, 'compaction edit');
  const calibratedTokensAfter = toCalibratedTokens(model, tokensAfter);
  // tokens*: the agent's (calibrated) count, as headroom and inspect show it; counted*: our raw count
  log?.info(
    {
      planId,
      sessionId,
      mode: options.mode,
      edits: edits.length,
      tokensBefore: empty.calibratedTokensBefore,
      tokensAfter: calibratedTokensAfter,
      target: toCalibratedTokens(model, target),
      countedTokensBefore: tokensBefore,
      countedTokensAfter: tokensAfter,
      countedTarget: target,
      survival: { checked: survival.checked, reinjected: survival.reinjected },
    },
    'compaction planned',
  );
  return { ...empty, headroomAfter: 1 - calibratedTokensAfter / total, tokensAfter, calibratedTokensAfter, edits, survival };
}

/** Summary token counts per counter (summaries repeat across rounds and re-plans). */
const countMemo = new WeakMap<TokenCounter, BoundedMemo<number>>();
function countTokens(counter: TokenCounter, text: string): number {
  let memo = countMemo.get(counter);
  if (!memo) {
    memo = new BoundedMemo<number>(4_000);
    countMemo.set(counter, memo);
  }
  return memo.get(text, () => counter.count(text));
}

/** Longest text (chars) of an edit's messages whose terms steer its summary. */
const KEY_TEXT_CHARS = 200_000;

/**
 * `contentTerms(textOf(messages))`, on the first KEY_TEXT_CHARS chars. Terms never span a line
 * break, so (under the cap) they are the union of each message's terms, memoized per message.
 */
function textTermsOf(messages: readonly Message[]): ReadonlySet<string> {
  return memoList(messages, 'text-terms', (ms) => {
    const length = ms.reduce((n, m) => n + memoMessage(m, 'text-length', (x) => textOf([x]).length), 0) + Math.max(0, ms.length - 1);
    if (length > KEY_TEXT_CHARS) return contentTerms(textOf(ms).slice(0, KEY_TEXT_CHARS));
    if (ms.length === 1 && ms[0]) return messageTerms(ms[0]);
    const out = new Set<string>();
    for (const m of ms) for (const t of messageTerms(m)) out.add(t);
    return out;
  });
}

/**
 * Detail fields that never reach a summary: section ids (a summary must not name one) and
 * scores. They move with every appended line (a newer identical call, a decayed score), so
 * the summary cache key leaves them out, or each re-plan would summarize those edits again.
 */
const DETAIL_NOT_SUMMARIZED: ReadonlySet<string> = new Set([...POINTER_FIELDS, 'pivot', 'score', 'similarity']);

/** The part of an edit's detail a summarizer may read, as a cache key. */
function detailKey(detail: Readonly<Record<string, unknown>>): string {
  const shown: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(detail)) if (!DETAIL_NOT_SUMMARIZED.has(k)) shown[k] = v;
  return JSON.stringify(shown);
}

/**
 * The SummaryCache key of a run's summary: every input the summarizer reads that changes what
 * it writes — the reason (two reasons can leave the same detail once scores are stripped, e.g.
 * `{}`), the goal (an LLM prompt names it; hashed, it can be long), the originals, key terms,
 * budget and detail. Exported for tests.
 */
export function summaryKey(summarizer: string, run: SelectedRun, goal: string, handle: string, keyTerms: readonly string[], messages: readonly Message[]): string {
  return `${summarizer}|${run.reason}|${fnv1a64(goal)}|${handle}|${run.summaryTokens}|${keyTerms.join(',')}|${messages.map((m) => `${m.id}:${m.text.length}`).join(',')}|${detailKey(run.detail)}`;
}

/**
 * `records` without those that would leave a claim of an applied pointer summary pointing at
 * nothing (`breaksApplied`): a section it rests on replaced while the summary is not. Selection
 * takes the two together, but the summary's edit may have been built to save nothing (dropped
 * by `buildEdits` when no other edit needs it).
 */
function keepAppliedTrue(records: EditRecord[], applied: readonly AppliedPointer[]): EditRecord[] {
  if (applied.length === 0) return records;
  let out = records;
  for (let lost = breaksApplied(applied, out.map((r) => r.edit)); lost !== undefined; lost = breaksApplied(applied, out.map((r) => r.edit))) {
    const gone = lost;
    out = out.filter((r) => !r.edit.replaces.includes(gone));
  }
  return out;
}

/** An edit with what built it and what its survival check found. */
interface EditRecord {
  readonly edit: Edit;
  readonly run: SelectedRun;
  readonly checked: number;
  readonly missing: readonly string[];
  /** The messages it summarized, by section (`summarizedOriginals` of the plan's edits). */
  readonly originals: ReadonlyMap<string, readonly Message[]>;
}

function savedBy(records: readonly EditRecord[]): number {
  return records.reduce((n, r) => n + r.edit.tokensBefore - r.edit.tokensAfter, 0);
}

/**
 * Summaries usually come in under their estimate, so the selection overshoots. Give back the
 * most valuable edits (highest value lost per token saved) while the target still holds — never
 * one whose return would leave an applied summary's claim pointing at nothing.
 */
function giveBack(records: EditRecord[], need: number, units: readonly Unit[], applied: readonly AppliedPointer[]): EditRecord[] {
  let saved = savedBy(records);
  if (saved <= need) return records;
  const costOf = new Map<string, number>();
  for (const u of units) costOf.set(u.section.id, REASON_DISCOUNT[u.reason] * Math.max(u.section.score, 1e-6) * u.section.tokens);
  const ranked = records
    .map((r, i) => ({ r, i, cost: r.edit.replaces.reduce((n, id) => n + (costOf.get(id) ?? 0), 0) / Math.max(1, r.edit.tokensBefore - r.edit.tokensAfter) }))
    .sort((a, c) => c.cost - a.cost || c.i - a.i);
  const dropped = new Set<EditRecord>();
  for (const { r } of ranked) {
    const s = r.edit.tokensBefore - r.edit.tokensAfter;
    // (an edit saving nothing is there to take an applied summary's claim away with what it rests on)
    if (s <= 0 || saved - s < need) continue;
    // nor is an applied summary's edit given back while what its claim rests on goes
    if (applied.length > 0 && breaksApplied(applied, records.filter((x) => x !== r && !dropped.has(x)).map((x) => x.edit)) !== undefined) continue;
    dropped.add(r);
    saved -= s;
  }
  return records.filter((r) => !dropped.has(r));
}

/**
 * When the plan lands well under its target, spend the slack on longer summaries: the
 * largest edits are re-summarized with a bigger budget (up to half their originals) as long
 * as the target still holds.
 */
async function spendSlack(model: CompactableModel, records: EditRecord[], need: number, b: BuildContext): Promise<EditRecord[]> {
  let slack = savedBy(records) - need;
  if (slack <= Math.max(64, need * 0.05) || records.length === 0) return records;
  const out = [...records];
  const order = out.map((r, i) => ({ r, i })).sort((a, c) => c.r.edit.tokensBefore - a.r.edit.tokensBefore || a.i - c.i);
  for (const { r, i } of order) {
    if (slack <= 64) break;
    const room = Math.min(slack * 0.9, r.edit.tokensBefore * 0.5 - r.edit.tokensAfter);
    if (room < 32) continue;
    // On a grid: the slack moves a little with every appended line, and a budget a few tokens
    // off would miss the summary cache on every re-plan (each edit summarized again).
    const summaryTokens = Math.floor((r.run.summaryTokens + room) / SLACK_BUDGET_STEP) * SLACK_BUDGET_STEP;
    if (summaryTokens <= r.run.summaryTokens) continue;
    await b.pause?.();
    const bigger = await buildEdit(model, { ...r.run, summaryTokens }, b);
    const grow = bigger.edit.tokensAfter - r.edit.tokensAfter;
    if (grow > 0 && grow <= slack && bigger.edit.tokensAfter < bigger.edit.tokensBefore) {
      out[i] = bigger;
      slack -= grow;
    }
  }
  return out;
}

interface BuildContext {
  readonly sessionId: string;
  readonly summarizer: Summarizer;
  readonly counter: TokenCounter;
  readonly refs: ReferenceIndex;
  readonly goal: string;
  readonly cache: SummaryCache | undefined;
  readonly signal: AbortSignal | undefined;
  readonly abort: (why: unknown) => void;
  readonly idPrefix: string;
  readonly pause: (() => Promise<void> | undefined) | undefined;
  /** Message ids of the plan's sections, by section id (how an edit's `pointer` names them). */
  readonly messageIds: ReadonlyMap<string, readonly string[]>;
  /** Pointer summaries applied before (`appliedPointers`). */
  readonly applied: readonly AppliedPointer[];
}

async function buildEdits(model: CompactableModel, runs: readonly SelectedRun[], b: BuildContext): Promise<EditRecord[]> {
  const results: EditRecord[] = new Array(runs.length);
  let next = 0;
  let failure: { readonly err: unknown } | undefined;
  const worker = async (): Promise<void> => {
    try {
      // after one failed (the plan is given up), the others take no new run
      while (!failure && next < runs.length) {
        b.signal?.throwIfAborted();
        const i = next++;
        const run = runs[i];
        if (!run) continue;
        await b.pause?.();
        results[i] = await buildEdit(model, run, b);
      }
    } catch (err) {
      // the first failure is the plan's; the others' calls are aborted, not left running
      if (!failure) {
        failure = { err };
        b.abort(err);
      }
    }
  };
  // every worker settled: no call of a given-up plan is still open, no rejection floats
  await Promise.allSettled(Array.from({ length: Math.min(SUMMARIZE_CONCURRENCY, runs.length) }, () => worker()));
  if (failure) throw failure.err;
  // an edit that saves nothing leaves its originals in place
  const built = results.filter((r) => r !== undefined);
  const saving = built.filter((r) => r.edit.tokensAfter < r.edit.tokensBefore);
  if (b.applied.length === 0 || saving.length === built.length) return saving;
  // A pointer summary applied earlier whose claim rests on a section another edit replaces is
  // rewritten whatever that saves (next to nothing: it is short): its claim leaves with what it
  // points at. Left as it is, the other edit could not be made (`keepAppliedTrue`).
  const replaced = new Set(saving.flatMap((r) => r.edit.replaces));
  const needed = new Set(b.applied.filter((p) => p.ends.some((id) => replaced.has(id)) || p.through.some((id) => replaced.has(id))).map((p) => p.id));
  return built.filter((r) => r.edit.tokensAfter < r.edit.tokensBefore || r.edit.replaces.some((id) => needed.has(id)));
}

async function buildEdit(model: CompactableModel, run: SelectedRun, b: BuildContext): Promise<EditRecord> {
  const ids = run.sections.map((s) => s.id);
  // Read once: the summary, the handle and the archive (originalsOf) all name these.
  const bySection = new Map(run.sections.map((s) => [s.id, [...model.messagesOf(s.id)]] as const));
  if ([...bySection.values()].some((ms) => ms.length === 0)) throw planExpired(b.sessionId, 'a section it replaces left the context');
  const messages: Message[] = [...bySection.values()].flat();
  // the same messages get the same handle on every re-plan: hashed once
  const handle = memoList(messages, `handle\u0000${b.sessionId}`, (ms) => handleFor(b.sessionId, ms));
  const editId = `${b.idPrefix}${fnv1a64(`edit\u0000${b.sessionId}\u0000${ids.join(',')}`)}`;
  const range = {
    start: Math.min(...run.sections.map((s) => s.messageRange.start)),
    end: Math.max(...run.sections.map((s) => s.messageRange.end)),
  };
  const keyTerms = b.refs.keyTermsOfSet(textTermsOf(messages), range.end);
  const input = { reason: run.reason, sections: run.sections, messages, goal: b.goal, detail: run.detail, keyTerms, maxTokens: run.summaryTokens, handle };
  const cacheKey = summaryKey(b.summarizer.name, run, b.goal, handle, keyTerms, messages);
  const hit = b.cache?.built(cacheKey);
  const raw = hit?.raw ?? (await b.summarizer.summarize(input, b.signal));
  const goalWords = b.refs.goalWords();
  const derivedFor = `${b.counter.encoding}|${goalWords.join(',')}`;
  let check: { content: string; tokens: number; checked: number; missing: readonly string[] };
  if (hit?.derivedFor === derivedFor && hit.content !== undefined && hit.tokens !== undefined && hit.checked !== undefined && hit.missing !== undefined) {
    check = { content: hit.content, tokens: hit.tokens, checked: hit.checked, missing: hit.missing };
  } else {
    const all = keyFacts(messages, goalWords, keyTerms);
    // In conversation, "must"/"always" mostly chat ("that must have been fun"): only standing
    // constraints are re-injected; the span summary keeps the rest of the words.
    // In tool work, an older user request is no anchor any more: a short one survives as said.
    const requests = messages
      .filter((m) => m.role === 'user' && !m.injected && !m.isSummary)
      .map((m) => (m.text ?? '').trim().replace(/\s+/g, ' '))
      .filter((t) => t.length >= 15 && t.length <= 240);
    const facts = isConversational(messages) ? { ...all, constraints: all.constraints.filter(isStandingConstraint) } : { ...all, constraints: [...all.constraints, ...requests] };
    const checked = ensureSurvival(`[contextd recall ${handle}] ${raw}`, facts);
    check = { ...checked, tokens: countTokens(b.counter, checked.content) };
    b.cache?.put(cacheKey, { raw, derivedFor, ...check });
  }
  const role: 'user' | 'assistant' = messages.every((m) => m.role === 'user') ? 'user' : 'assistant';
  const scores: Record<string, ScoreFactors> = {};
  for (const s of run.sections) scores[s.id] = s.factors;
  const edit: Edit = {
    editId,
    replaces: ids,
    messageRange: range,
    summary: { role, content: check.content },
    tokensBefore: run.tokensBefore,
    tokensAfter: check.tokens + MESSAGE_OVERHEAD_TOKENS,
    reason: run.reason,
    scores,
    handle,
    ...pointerOf(run, b.messageIds),
  };
  return { edit, run, checked: check.checked, missing: check.missing, originals: bySection };
}

/** A kept pointer summary's basis (`Edit.pointer`): the sections it rests on and replaces, by their messages' ids. */
function pointerOf(run: SelectedRun, messageIds: ReadonlyMap<string, readonly string[]>): { pointer?: PointerBasis } {
  const keys = (ids: readonly string[]): (readonly string[])[] => ids.map((id) => messageIds.get(id) ?? []);
  const pointer = pointerBasis(run.reason, run.detail, keys(run.reliesOn ?? []), keys(run.sections.map((x) => x.id)));
  return pointer ? { pointer } : {};
}

/**
 * Apply accepted edits of a plan to the model (all, or those in `editIds`). Throws
 * PLAN_EXPIRED if a replaced section is gone (the model moved on), or a section a summary
 * points at is gone or replaced with it, or one a summary applied earlier points at would be
 * replaced other than by a pointer carrying its claim on (a summary would cite what the agent
 * no longer sees); nothing is applied then.
 */
export function applyPlan(model: EditableModel, plan: Plan, editIds?: readonly string[]): Section[] {
  const wanted = editIds ? new Set(editIds) : undefined;
  const edits = plan.edits.filter((e) => !wanted || wanted.has(e.editId));
  for (const e of edits) {
    for (const id of e.replaces) {
      const s = model.section(id);
      if (!s || s.anchor || s.pending) {
        throw new ContextdError(ErrorCode.PLAN_EXPIRED, `plan ${plan.planId} is stale: section ${id} is no longer replaceable`, { planId: plan.planId, editId: e.editId, sectionId: id });
      }
    }
  }
  const lost = lostPointer(model, edits);
  if (lost !== undefined) {
    const { why, ...at } = lost;
    throw new ContextdError(ErrorCode.PLAN_EXPIRED, `plan ${plan.planId} is stale: ${why}`, { planId: plan.planId, ...at });
  }
  // All at once where the model can: it scores its sections once instead of once per edit.
  if (model.replaceEach) return model.replaceEach(edits.map(replacementOf));
  return edits.map((e) => {
    const r = replacementOf(e);
    return model.replaceSections(r.sectionIds, r.summary);
  });
}

/** What an edit asks of the model: the sections it replaces and the summary put in their place. */
export function replacementOf(e: Edit): { readonly sectionIds: readonly string[]; readonly summary: ReplacementSummary } {
  // tokensAfter is the summary's count plus one message's overhead (buildEdit): the text's own
  // count is passed on, so a summary stored with its secrets redacted replays at the size the agent holds
  const tokens = e.tokensAfter - MESSAGE_OVERHEAD_TOKENS;
  // a pointer summary keeps what it rests on with it, for later plans (pointers.ts)
  return { sectionIds: e.replaces, summary: { text: e.summary.content, role: e.summary.role, editId: e.editId, handle: e.handle, reason: e.reason, ...(tokens >= 0 ? { tokens } : {}), ...(e.pointer ? { pointer: e.pointer } : {}) } };
}

/**
 * SessionModel: the live context of one agent session as scored sections (design §4).
 *
 * Fed with normalized `TranscriptEvent`s. Every message is tokenized exactly once, when it
 * arrives; the session total is maintained incrementally. Scores (kind, priority, anchor,
 * relevance, recency, density) are recomputed lazily, only when `sections()` (or a reader of
 * scores) is called after a change, and without tokenizer calls.
 */
import type { Message, PointerBasis, SessionMeta, TranscriptEvent } from './messages.js';
import { ContextdError, ErrorCode } from '../util/errors.js';
import { DEFAULT_RESERVE_RATIO, resolveBudget } from './budget.js';
import { Calibrator, type Calibration } from './calibration.js';
import { LiveContext } from './context.js';
import { countMessages, type SectionRec } from './fragments.js';
import { DEFAULT_HALF_LIFE_SECONDS, DEFAULT_HALF_LIFE_TURNS } from './recency.js';
import { messageRanges, scoreAll, SUMMARY_ID_PREFIX } from './scoring.js';
import { isAnchor, isPending, kindOf } from './priority.js';
import { createTokenCounter, type TokenCountCache, type TokenCounter } from './tokens.js';
import type { DerivedDataCache } from './derived.js';
import type { Budget, HeadroomSnapshot, Section } from './types.js';

export interface SessionModelOptions {
  readonly sessionId: string;
  /** Default: createTokenCounter('o200k_base'). */
  readonly tokenCounter?: TokenCounter;
  /** Counts of messages seen before (e.g. before a restart), read back instead of tokenizing. */
  readonly tokenCache?: TokenCountCache;
  /** Term stats and fingerprints of fragments analysed before (e.g. before a restart), read back instead of analysing. */
  readonly derivedCache?: DerivedDataCache;
  /** Context window override (config / CLI); wins over reported and preset windows. */
  readonly budgetTokens?: number;
  /** Share of the window kept free; default 0.15. */
  readonly reserveRatio?: number;
  /** Recency e-folding length in turns; default 8. */
  readonly halfLifeTurns?: number;
  /** Recency e-folding length in seconds; default 1800. */
  readonly halfLifeSeconds?: number;
}

export interface SessionCounts {
  /** Message events received (including those later truncated, reset or replaced). */
  readonly messages: number;
  readonly unknownEvents: number;
  readonly resets: number;
  readonly truncations: number;
}

export interface ReplacementSummary {
  /** Summary text, written by the caller (it quotes the archive handle). */
  readonly text: string;
  /** Role of the summary message; default 'user'. */
  readonly role?: 'user' | 'assistant' | 'system';
  readonly editId: string;
  readonly handle: string;
  readonly reason: string;
  /**
   * Tokens of `text` as counted when the summary was made, when known: a replayed summary is
   * counted as the agent holds it even where its stored text differs (secrets redacted in the
   * plan log). Counted from `text` when absent.
   */
  readonly tokens?: number;
  /** A pointer summary: what its claim rests on, kept on the summary message. */
  readonly pointer?: PointerBasis;
}

/** An edit accepted before, replayed (`SessionModel.replayEach`): what it replaced when it was made. */
export interface ReplayedEdit {
  readonly sectionIds: readonly string[];
  readonly summary: ReplacementSummary;
  /** Tokens of the sections it replaced, and their message range, when it was made. */
  readonly tokens: number;
  readonly messageRange: { readonly start: number; readonly end: number };
}

/** An edit replayed (`replayEach`) that no longer stands. */
function stale(editId: string, why: string): ContextdError {
  return new ContextdError(ErrorCode.PLAN_EXPIRED, `edit ${editId} cannot be replayed: ${why}`, { editId });
}

function badOption(name: string, value: unknown): ContextdError {
  return new ContextdError(ErrorCode.CONFIG_INVALID, `SessionModel option ${name} is invalid: ${String(value)}`, { option: name, value });
}

/**
 * The live, scored context of one session.
 *
 * Sections: one per message, except that an assistant message with tool calls gives one
 * section for its text (or reasoning) and one per call; a call's section also holds its
 * result(s), paired by `toolCallId` whatever the order. Section ids (`s1`, `s2`, …) are never
 * reused, even after a truncate or reset. Rules live next to their code: kinds, priorities and
 * anchors in priority.ts, relevance in relevance.ts, density in density.ts, recency in
 * recency.ts, the score in score.ts, the budget in budget.ts.
 *
 * Events: `message` appends (a result joins its call's section); `truncate` drops every message
 * after `keepThroughId` (an unknown id changes nothing; `null` clears); `reset` clears the
 * context (ids keep counting); `usage` records the agent-reported size; `meta` merges; a
 * `turn-end` closes the turn (its last assistant text becomes its final answer); `unknown` is
 * only counted.
 */
export class SessionModel {
  readonly sessionId: string;
  private readonly counter: TokenCounter;
  private readonly tokenCache: TokenCountCache | undefined;
  private readonly budgetTokens: number | undefined;
  private readonly reserveRatio: number;
  private readonly halfLifeTurns: number;
  private readonly halfLifeSeconds: number;

  private readonly ctx: LiveContext;
  private ver = 0;
  private epochValue = 0;
  /** Set when the context changed since the last scoring pass (usage/meta events do not set it). */
  private scoreDirty = true;
  private scored: readonly Section[] = [];
  private scoredById = new Map<string, Section>();
  private metaState: SessionMeta = {};
  private reportedTokens: number | undefined;
  private readonly calibrator = new Calibrator();
  private lastModel: string | undefined;
  private readonly countState = { messages: 0, unknownEvents: 0, resets: 0, truncations: 0 };

  constructor(options: SessionModelOptions) {
    if (!options.sessionId) throw badOption('sessionId', options.sessionId);
    const { budgetTokens, reserveRatio = DEFAULT_RESERVE_RATIO } = options;
    const { halfLifeTurns = DEFAULT_HALF_LIFE_TURNS, halfLifeSeconds = DEFAULT_HALF_LIFE_SECONDS } = options;
    if (budgetTokens !== undefined && !(Number.isFinite(budgetTokens) && budgetTokens > 0)) throw badOption('budgetTokens', budgetTokens);
    if (!(reserveRatio >= 0 && reserveRatio < 1)) throw badOption('reserveRatio', reserveRatio);
    if (!(halfLifeTurns > 0)) throw badOption('halfLifeTurns', halfLifeTurns);
    if (!(halfLifeSeconds > 0)) throw badOption('halfLifeSeconds', halfLifeSeconds);
    this.sessionId = options.sessionId;
    this.counter = options.tokenCounter ?? createTokenCounter('o200k_base');
    this.budgetTokens = budgetTokens;
    this.reserveRatio = reserveRatio;
    this.halfLifeTurns = halfLifeTurns;
    this.halfLifeSeconds = halfLifeSeconds;
    this.tokenCache = options.tokenCache;
    this.ctx = new LiveContext(this.counter, options.tokenCache, options.derivedCache);
  }

  // ---------------------------------------------------------------- events

  apply(event: TranscriptEvent): void {
    this.applyCounted(event);
  }

  /** `apply`, with the message's token counts when a batch already looked them up. */
  private applyCounted(event: TranscriptEvent, counts?: readonly number[]): void {
    switch (event.type) {
      case 'message':
        this.countState.messages++;
        if (event.message.model) this.lastModel = event.message.model;
        this.ctx.appendMessage(event.message, counts);
        break;
      case 'usage':
        this.reportedTokens = event.contextTokens;
        this.calibrator.add(this.ctx.totalTokens, event.contextTokens);
        break;
      case 'meta':
        this.metaState = { ...this.metaState, ...definedOnly(event.meta) };
        break;
      case 'truncate':
        this.countState.truncations++;
        this.epochValue++;
        this.ctx.truncate(event.keepThroughId);
        if (event.keepThroughId === null) this.forgetReport();
        break;
      case 'reset':
        this.countState.resets++;
        this.epochValue++;
        this.ctx.clear();
        this.forgetReport();
        break;
      case 'turn-end':
        this.ctx.endTurn();
        break;
      case 'unknown':
        this.countState.unknownEvents++;
        return; // not a change of the context
    }
    if (event.type !== 'usage' && event.type !== 'meta') this.scoreDirty = true;
    this.ver++;
  }

  applyAll(events: Iterable<TranscriptEvent>): void {
    const list = [...events];
    const messages = list.flatMap((e) => (e.type === 'message' ? [e.message] : []));
    if (messages.length < 2 || !this.tokenCache?.getMany) {
      for (const e of list) this.apply(e);
      return;
    }
    // The batch's token counts in one cache round trip (a restart reads thousands of lines at once).
    const counts = countMessages(messages, this.counter, this.tokenCache);
    let k = 0;
    for (const e of list) this.applyCounted(e, e.type === 'message' ? counts[k++] : undefined);
  }

  // ---------------------------------------------------------------- reads

  /** Increments on every change (every applied event except `unknown`, and each replacement). */
  get version(): number {
    return this.ver;
  }

  /**
   * Increments whenever sections may leave the context or change identity: a truncate, a reset,
   * each replacement (an applied edit). Appends do not move it, so work that read the sections
   * (a plan in flight) knows they are all still there while it is unchanged.
   */
  get epoch(): number {
    return this.epochValue;
  }

  /** The live context in order; contextd summaries stand where the replaced sections began. */
  messages(): readonly Message[] {
    return this.ctx.messages();
  }

  /** Scored sections in context order (recomputed lazily after a change). */
  sections(): readonly Section[] {
    this.ensureScored();
    return this.scored;
  }

  section(id: string): Section | undefined {
    this.ensureScored();
    return this.scoredById.get(id);
  }

  /** The messages of one section; for a call split out of a multi-call message, a view with only that call. */
  messagesOf(sectionId: string): readonly Message[] {
    const rec = this.ctx.recById.get(sectionId);
    return rec ? this.ctx.messagesOf(rec) : [];
  }

  /** Tokens of the live context; O(1). */
  tokens(): number {
    return this.ctx.totalTokens;
  }

  budget(): Budget {
    return resolveBudget({
      budgetTokens: this.budgetTokens,
      reportedContextWindow: this.metaState.contextWindow,
      model: this.metaState.model ?? this.lastModel,
      reserveRatio: this.reserveRatio,
    });
  }

  headroom(): HeadroomSnapshot {
    const b = this.budget();
    const counted = this.ctx.totalTokens;
    const cal = this.calibration();
    const tokens = cal.samples > 0 ? Math.max(0, cal.estimatedTokens) : counted;
    return {
      tokens,
      countedTokens: counted,
      total: b.total,
      reserveRatio: b.reserveRatio,
      headroom: 1 - tokens / b.total,
      sections: this.ctx.recById.size,
      ...(this.reportedTokens !== undefined ? { reportedTokens: this.reportedTokens } : {}),
    };
  }

  /** The current goal: the latest real user instruction. */
  goal(): { text: string; sectionId?: string } {
    const rec = this.ctx.goal();
    if (!rec) return { text: '' };
    return { text: rec.frags.map((f) => f.entry.message.text).join('\n'), sectionId: rec.id };
  }

  meta(): SessionMeta {
    const m = this.metaState;
    return m.model === undefined && this.lastModel !== undefined ? { ...m, model: this.lastModel } : { ...m };
  }

  counts(): SessionCounts {
    return { ...this.countState };
  }

  // ---------------------------------------------------------------- compaction

  /**
   * Applies an accepted compaction edit: the sections leave the live context and one summary
   * section (kind 'summary', compacted: true) takes the place of the first of them. Only the
   * summary text is tokenized. Throws ContextdError (USAGE) if the list is empty, or an id is
   * unknown, an anchor or a pending tool call; nothing changes then.
   */
  replaceSections(sectionIds: readonly string[], summary: ReplacementSummary): Section {
    const [created] = this.replaceEach([{ sectionIds, summary }]);
    if (!created) throw new ContextdError(ErrorCode.LIFECYCLE, 'summary section vanished');
    return created;
  }

  /**
   * Applies several accepted edits at once (a plan's), each as `replaceSections` does: every
   * edit is checked against the model as it is before the first (an id named by two edits is
   * refused too), so either all apply or none does, and the sections are scored once after
   * the last instead of once per edit.
   */
  replaceEach(edits: readonly { readonly sectionIds: readonly string[]; readonly summary: ReplacementSummary }[]): Section[] {
    this.ensureScored();
    const claimed = new Set<string>();
    const batches = edits.map(({ sectionIds, summary }) => {
      const ids = [...new Set(sectionIds)];
      if (ids.length === 0) throw refuse('no sections to replace', { reason: 'empty' });
      const recs: SectionRec[] = [];
      for (const id of ids) {
        const rec = this.ctx.recById.get(id);
        const sec = this.scoredById.get(id);
        if (!rec || !sec) throw refuse(`unknown section ${id}`, { reason: 'unknown-section', sectionId: id });
        if (sec.pending) throw refuse(`section ${id} is a pending tool call`, { reason: 'pending', sectionId: id });
        if (sec.anchor) throw refuse(`section ${id} is an anchor`, { reason: 'anchor', sectionId: id });
        if (claimed.has(id)) throw refuse(`section ${id} is replaced by two edits`, { reason: 'overlap', sectionId: id });
        claimed.add(id);
        recs.push(rec);
      }
      return { recs, summary };
    });
    const created = this.replaceBatches(batches);
    return created.map((id) => {
      const section = this.section(id);
      if (!section) throw new ContextdError(ErrorCode.LIFECYCLE, 'summary section vanished');
      return section;
    });
  }

  /**
   * Replays edits accepted before (the rebuild of a released session, or of one after a
   * restart): as `replaceEach`, without scoring the model before or after — nothing reads the
   * scores, and a rebuild replaying many plans scored the whole model once per plan. Every edit
   * must find its sections as they were when it was made: present, neither an anchor nor a
   * pending call, claimed by no other edit, holding `tokens` tokens of the messages
   * `messageRange` (the same ids can name other text: a transcript changed between the ack and
   * the replay). Throws PLAN_EXPIRED otherwise, and nothing changes.
   */
  replayEach(edits: readonly ReplayedEdit[]): void {
    this.ctx.compactRecs();
    const goal = this.ctx.goal();
    const ranges = messageRanges(this.ctx.entries);
    const claimed = new Set<string>();
    const batches = edits.map(({ sectionIds, summary, tokens, messageRange }) => {
      const recs: SectionRec[] = [];
      let held = 0;
      let start = Number.POSITIVE_INFINITY;
      let end = Number.NEGATIVE_INFINITY;
      for (const id of new Set(sectionIds)) {
        const rec = this.ctx.recById.get(id);
        if (!rec) throw stale(summary.editId, `section ${id} is not in the model`);
        const kind = kindOf(rec);
        const pending = isPending(rec);
        if (pending || isAnchor({ kind, pending, tokens: rec.tokens, decision: rec.decision, constraint: rec.constraint, isGoal: rec === goal })) throw stale(summary.editId, `section ${id} is ${pending ? 'a pending tool call' : 'an anchor'}`);
        if (claimed.has(id)) throw stale(summary.editId, `section ${id} is replaced by two edits`);
        claimed.add(id);
        recs.push(rec);
        held += rec.tokens;
        const r = ranges.get(rec);
        if (r) {
          start = Math.min(start, r.start);
          end = Math.max(end, r.end);
        }
      }
      if (recs.length === 0) throw stale(summary.editId, 'no sections to replace');
      if (held !== tokens || start !== messageRange.start || end !== messageRange.end) {
        throw stale(summary.editId, `it replaced ${tokens} tokens of messages ${messageRange.start}–${messageRange.end}; its sections hold ${held} tokens of messages ${start}–${end} now`);
      }
      return { recs, summary };
    });
    this.replaceBatches(batches);
  }

  /** Puts each batch's summary in place of its sections; returns the summaries' section ids. */
  private replaceBatches(batches: readonly { readonly recs: readonly SectionRec[]; readonly summary: ReplacementSummary }[]): string[] {
    return batches.map(({ recs, summary }) => {
      let ts: number | undefined;
      for (const r of recs) {
        for (const f of r.frags) {
          const t = f.entry.message.timestamp;
          if (t !== undefined && (ts === undefined || t > ts)) ts = t;
        }
      }
      const message: Message = {
        id: `${SUMMARY_ID_PREFIX}${summary.editId}`,
        role: summary.role ?? 'user',
        text: summary.text,
        isSummary: true,
        ...(ts !== undefined ? { timestamp: ts } : {}),
        ...(summary.pointer ? { pointer: summary.pointer } : {}),
      };
      const known = summary.tokens !== undefined && Number.isSafeInteger(summary.tokens) && summary.tokens >= 0 ? [summary.tokens, 0] : undefined;
      const rec = this.ctx.replace(recs, message, { summary: { editId: summary.editId, handle: summary.handle, reason: summary.reason } }, known);
      this.ver++;
      this.epochValue++;
      this.scoreDirty = true;
      return rec.id;
    });
  }

  /**
   * How our count relates to what the agent reports (see calibration.ts): a fitted
   * `reported ≈ offsetTokens + ratio × counted`, and `estimatedTokens` for the live context
   * now. Identity (offset 0, ratio 1) until a usage event arrives; forgotten on reset.
   */
  calibration(): Calibration {
    return this.calibrator.calibration(this.ctx.totalTokens);
  }

  // ---------------------------------------------------------------- internals

  private forgetReport(): void {
    this.reportedTokens = undefined;
    this.calibrator.clear();
  }

  /**
   * Frees the per-message derived data (term stats, fingerprints) and the scores built on it
   * (memory pressure): the next read of scores derives it again, from the derived cache when it
   * holds it. Tokens, sections and messages are kept.
   */
  dropDerived(): void {
    this.ctx.dropDerived();
    this.scoreDirty = true;
    this.scored = [];
    this.scoredById = new Map();
  }

  /** Derives what was never derived, recomputes density features of changed sections, then rescoring if anything changed. */
  private ensureScored(): void {
    if (!this.scoreDirty) return;
    this.ctx.ensureDerived();
    this.ctx.refreshDensity();
    this.scored = Object.freeze(
      scoreAll({
        sessionId: this.sessionId,
        recs: this.ctx.recs,
        entries: this.ctx.entries,
        index: this.ctx.index,
        turnEndSeq: this.ctx.turnEndSeq,
        halfLifeTurns: this.halfLifeTurns,
        halfLifeSeconds: this.halfLifeSeconds,
      }),
    );
    this.scoredById = new Map(this.scored.map((s) => [s.id, s]));
    this.scoreDirty = false;
  }
}

function refuse(message: string, details: Record<string, unknown>): ContextdError {
  return new ContextdError(ErrorCode.USAGE, `replaceSections refused: ${message}`, details);
}

function definedOnly(meta: SessionMeta): SessionMeta {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(meta)) if (v !== undefined) out[k] = v;
  return out as SessionMeta;
}

/**
 * One proxied conversation: the section model built from its requests, the replacements
 * its plans made, and what was last forwarded.
 *
 * Cache-aware by construction: a replacement names the exact original items it replaces
 * (by chained ids), and every later request that still holds those items gets the same
 * summary in the same place — the rewritten prefix stays byte-identical between plans, so a
 * provider's prompt cache keeps hitting. A new plan is made only when a request crosses the
 * reserve, and it plans down to reserve + hysteresis, so rewrites come in batches.
 */
import { createHash } from 'node:crypto';
import { messageContentKey, type Message } from '../model/messages.js';
import { SessionModel } from '../model/index.js';
import type { TokenCounter } from '../model/tokens.js';
import { SUMMARY_ID_PREFIX } from '../model/index.js';
import { applyPlan, archiveEntries, originalsOf, planCompaction, redactEntries, SummaryCache, type CompactableModel, type Plan, type Summarizer } from '../compact/index.js';
import type { Logger } from '../util/logger.js';
import { describeError } from '../util/errors.js';
import { canonicalJson, type ItemEdit, type JsonObject, type ParsedRequest, type ProviderFormat, type ProviderFormatName } from './request.js';
import type { ArchiveSink, OriginalsFilter } from './types.js';

export interface ConversationDeps {
  readonly tokenCounter: TokenCounter;
  readonly summarizer: Summarizer;
  readonly archive: ArchiveSink | undefined;
  /** Redacts originals before they are archived (the recall tool answers what is archived). */
  readonly archiveFilter?: OriginalsFilter | undefined;
  readonly logger: Logger;
  readonly now: () => number;
  /** Context window for every conversation (else the model's preset). */
  readonly budgetTokens: number | undefined;
  readonly reserveRatio: number;
  readonly hysteresis: number;
}

/** A summary standing for original items of the conversation. */
interface Replacement {
  readonly editId: string;
  readonly handle: string;
  readonly reason: string;
  readonly role: 'user' | 'assistant';
  readonly text: string;
  /** Ids of the original items it replaces, in order. */
  readonly ids: readonly string[];
}

/** What preparing one request did. */
export interface Prepared {
  readonly body: JsonObject;
  /** Tokens of the request as the agent sent it, and as forwarded (section model counts). */
  readonly tokensIn: number;
  readonly tokensOut: number;
  readonly replacements: number;
  /** A plan was made and applied for this request. */
  readonly plan: Plan | undefined;
  /** The forwarded prefix differs from what was forwarded before, because of contextd. */
  readonly cacheBreak: boolean;
  /**
   * Conversation messages (system prompt and tool definitions left out) this request showed
   * for the first time, as the agent sent them: what harvest reads, never the compacted view.
   */
  readonly fresh: readonly Message[];
}

export interface ConversationStats {
  requests: number;
  plansApplied: number;
  cacheBreaks: number;
  /** Σ tokens as sent by the agent / as forwarded, over all requests. */
  tokensIn: number;
  tokensOut: number;
  rebuilds: number;
}

export class Conversation {
  model: SessionModel;
  lastActivityAt: number;
  readonly stats: ConversationStats = { requests: 0, plansApplied: 0, cacheBreaks: 0, tokensIn: 0, tokensOut: 0, rebuilds: 0 };
  /** Tokens the active replacements save (originals − summaries). */
  private saved = 0;
  private ids: string[] = [];
  private readonly replacements = new Map<string, Replacement>();
  /** Digests of the items of the list last forwarded. */
  private lastSent: string[] | undefined;
  private readonly summaryCache = new SummaryCache();
  /**
   * Content keys (position among the conversation's messages + what the message says) of
   * every message seen so far, so `fresh` holds each original once. Not the chained ids:
   * those change with the system prompt or tool list, which would re-add the whole history.
   */
  private readonly seen = new Set<string>();
  /** Ids of the last exchange of the newest request (never compacted). */
  private lastProtected = new Set<string>();
  /**
   * Recall tool answers given so far, by handle and room: every later request repeats each
   * call, and archived originals never change, so each is read and counted once.
   */
  private readonly recallAnswers = new Map<string, string>();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly log: Logger;

  constructor(
    readonly id: string,
    readonly agentSessionId: string | undefined,
    readonly format: ProviderFormatName,
    private readonly deps: ConversationDeps,
  ) {
    this.model = this.newModel();
    this.lastActivityAt = deps.now();
    this.log = deps.logger.child({ component: 'proxy', sessionId: id });
  }

  /** Model, plan and rewrite one request. Requests of one conversation run one at a time. */
  prepare(format: ProviderFormat, parsed: ParsedRequest, body: JsonObject): Promise<Prepared> {
    const run = this.queue.then(() => this.prepareNow(format, parsed, body));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async prepareNow(format: ProviderFormat, parsed: ParsedRequest, body: JsonObject): Promise<Prepared> {
    this.lastActivityAt = this.deps.now();
    const extended = this.sync(parsed);
    const fresh = this.freshOriginals(parsed);
    this.lastProtected = new Set(parsed.items.slice(parsed.protectedFrom).map((i) => i.message.id));
    const tokensIn = this.model.tokens() + this.saved;
    let plan: Plan | undefined;
    if (this.model.headroom().headroom < this.model.budget().reserveRatio) plan = await this.plan('reserve', undefined);
    const edits = this.itemEdits(parsed);
    const out = edits.size > 0 ? format.render(body, edits) : body;
    // kept as digests: a conversation holds its last forwarded list only to compare prefixes
    const sent = listOf(format.name, out).map((m) => createHash('sha256').update(canonicalJson(m)).digest('base64'));
    const prev = this.lastSent;
    const prefixKept = prev === undefined || (prev.length <= sent.length && prev.every((m, i) => m === sent[i]));
    const cacheBreak = extended && !prefixKept;
    this.lastSent = sent;
    const tokensOut = this.model.tokens();
    this.stats.requests++;
    this.stats.tokensIn += tokensIn;
    this.stats.tokensOut += tokensOut;
    if (cacheBreak) this.stats.cacheBreaks++;
    return { body: out, tokensIn, tokensOut, replacements: this.replacements.size, plan, cacheBreak, fresh };
  }

  /**
   * Compact now, whatever the headroom (`session.compact`): plan down to `targetHeadroom`
   * (default reserve + hysteresis) on the model of the last request, leaving its last exchange
   * alone; archive and apply. The conversation's next request carries the summaries (and every
   * later one, as for any plan). Undefined when nothing could be compacted, or before any request.
   */
  compactNow(targetHeadroom: number | undefined): Promise<Plan | undefined> {
    const run = this.queue.then(() => (this.ids.length === 0 ? undefined : this.plan('manual', targetHeadroom)));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Messages of the conversation not seen before, in order (system prompt and tool definitions left out). */
  private freshOriginals(parsed: ParsedRequest): Message[] {
    const out: Message[] = [];
    let position = 0;
    for (const it of parsed.items) {
      if (it.loc === 'tools' || it.loc === 'sys' || it.loc.startsWith('sys.')) continue;
      const key = createHash('sha256').update(`${position++}\u0000${messageContentKey(it.message)}`).digest('base64');
      if (this.seen.has(key)) continue;
      this.seen.add(key);
      out.push(it.message);
    }
    return out;
  }

  /**
   * Bring the model up to this request. Returns true when the request extends the previous one
   * (same prefix, new items appended): only the new items are modelled. Otherwise the agent
   * changed its history (its own compaction, a rewind, an edit): the model is rebuilt and the
   * replacements whose originals are all still there are applied again.
   */
  private sync(parsed: ParsedRequest): boolean {
    const ids = parsed.items.map((i) => i.message.id);
    const n = this.ids.length;
    const extends_ = n > 0 && ids.length >= n && ids[n - 1] === this.ids[n - 1];
    if (parsed.model && parsed.model !== this.model.meta().model) this.model.apply({ type: 'meta', meta: { model: parsed.model } });
    if (extends_) {
      for (const it of parsed.items.slice(n)) this.model.apply({ type: 'message', message: it.message });
      this.ids = ids;
      return true;
    }
    if (n > 0) this.stats.rebuilds++;
    this.model = this.newModel();
    if (parsed.model) this.model.apply({ type: 'meta', meta: { model: parsed.model } });
    for (const it of parsed.items) this.model.apply({ type: 'message', message: it.message });
    this.ids = ids;
    this.saved = 0;
    const present = new Set(ids);
    for (const [editId, r] of [...this.replacements]) {
      if (!r.ids.every((id) => present.has(id)) || !this.reapply(r)) this.replacements.delete(editId);
    }
    return n === 0;
  }

  /** Apply a known replacement to a freshly built model. */
  private reapply(r: Replacement): boolean {
    const want = new Set(r.ids);
    const sections = this.model.sections().filter((s) => s.messageIds.some((id) => want.has(id)));
    const covered = sections.flatMap((s) => s.messageIds);
    if (sections.length === 0 || covered.length !== want.size || !covered.every((id) => want.has(id))) return false;
    const before = this.model.tokens();
    try {
      this.model.replaceSections(sections.map((s) => s.id), { text: r.text, role: r.role, editId: r.editId, handle: r.handle, reason: r.reason });
    } catch {
      return false;
    }
    this.saved += before - this.model.tokens();
    return true;
  }

  /**
   * Plan back to reserve + hysteresis ('reserve', past the reserve) or to `targetHeadroom`
   * ('manual', asked for), leaving the last exchange alone; archive and apply.
   */
  private async plan(mode: 'reserve' | 'manual', targetHeadroom: number | undefined): Promise<Plan | undefined> {
    const model = this.model;
    let plan: Plan;
    try {
      plan = await planCompaction(withAnchors(model, this.lastProtected), {
        mode,
        ...(targetHeadroom !== undefined ? { targetHeadroom } : {}),
        reserveRatio: model.budget().reserveRatio,
        hysteresis: this.deps.hysteresis,
        summarizer: this.deps.summarizer,
        tokenCounter: this.deps.tokenCounter,
        cache: this.summaryCache,
        now: this.deps.now,
        idPrefix: 'x_',
      });
    } catch (err) {
      this.log.error({ err: describeError(err) }, 'proxy planning failed: request forwarded as the agent sent it');
      return undefined;
    } finally {
      this.summaryCache.endPlan();
    }
    if (model !== this.model) return undefined; // rebuilt meanwhile (cannot happen while requests are serialized)
    const edits = plan.edits;
    if (edits.length === 0) {
      if (mode === 'reserve') this.log.warn({ tokens: model.tokens(), total: model.budget().total }, 'over the reserve but nothing can be compacted');
      else this.log.info({ tokens: model.tokens(), total: model.budget().total, targetHeadroom: targetHeadroom ?? null }, 'compaction asked for but nothing can be compacted');
      return undefined;
    }
    // What each edit summarized and its handle names (the planner's `originalsOf`), never the
    // model read again: the daemon archives the same way.
    const at = { sessionId: this.id, planId: plan.planId, createdAt: plan.createdAt };
    const sources = edits.map((e) => ({ e, source: originalsOf(e) }));
    const hollow = sources.filter(({ e, source }) => !source || e.replaces.some((id) => source.messagesOf(id).length === 0)).map(({ e }) => e.editId);
    if (hollow.length > 0) {
      this.log.error({ planId: plan.planId, editIds: hollow }, 'edits with no originals to archive: plan not applied');
      return undefined;
    }
    const raw = sources.flatMap(({ e, source }) => (source ? archiveEntries(source, [e], at) : []));
    const originals = new Map(raw.map((e) => [e.editId, e.messages]));
    const chosen: Plan = { ...plan, edits };
    try {
      this.deps.archive?.putMany(await redactEntries(raw, this.deps.archiveFilter));
    } catch (err) {
      // Without the originals archived a summary's handle would point at nothing: do not apply.
      this.log.error({ err: describeError(err) }, 'cannot archive originals: plan not applied');
      return undefined;
    }
    const before = model.tokens();
    applyPlan(model, chosen);
    this.saved += before - model.tokens();
    for (const e of edits) this.record(e.editId, e.handle, e.reason, e.summary.role, e.summary.content, originals.get(e.editId) ?? []);
    this.stats.plansApplied++;
    const h = model.headroom();
    const applied: Plan = { ...chosen, tokensBefore: before, tokensAfter: model.tokens(), headroomAfter: h.headroom };
    this.log.info(
      {
        planId: plan.planId,
        edits: edits.length,
        tokensBefore: before,
        tokensAfter: model.tokens(),
        headroomBefore: plan.headroomBefore,
        headroomAfter: h.headroom,
        total: h.total,
        handles: edits.map((e) => e.handle),
        reasons: edits.map((e) => e.reason),
        mode,
      },
      'proxy plan applied',
    );
    return applied;
  }

  /** Keep a replacement; one that swallows earlier summaries takes over their originals. */
  private record(editId: string, handle: string, reason: string, role: 'user' | 'assistant', text: string, originals: readonly Message[]): void {
    const ids: string[] = [];
    for (const m of originals) {
      const inner = m.id.startsWith(SUMMARY_ID_PREFIX) ? this.replacements.get(m.id.slice(SUMMARY_ID_PREFIX.length)) : undefined;
      if (inner) {
        ids.push(...inner.ids);
        this.replacements.delete(inner.editId);
      } else ids.push(m.id);
    }
    const order = new Map(this.ids.map((id, i) => [id, i]));
    ids.sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
    this.replacements.set(editId, { editId, handle, reason, role, text, ids });
  }

  /** Item edits of every replacement, by location in this request. */
  private itemEdits(parsed: ParsedRequest): Map<string, ItemEdit> {
    const locOf = new Map(parsed.items.map((i) => [i.message.id, i.loc]));
    const edits = new Map<string, ItemEdit>();
    for (const r of this.replacements.values()) {
      const locs = r.ids.map((id) => locOf.get(id));
      if (locs.some((l) => l === undefined)) continue;
      locs.forEach((loc, i) => edits.set(loc as string, i === 0 ? { drop: true, insert: { role: r.role, text: r.text } } : { drop: true }));
    }
    return edits;
  }

  /**
   * The recall tool's answer for `handle` cut to `room` tokens: remembered from an earlier
   * request, else `read` (an answer it says not to keep, such as an unreadable archive, is
   * read again next time).
   */
  recallAnswer(handle: string, room: number, read: () => { text: string; keep: boolean }): string {
    const key = `${handle}\u0000${room}`;
    const known = this.recallAnswers.get(key);
    if (known !== undefined) return known;
    const { text, keep } = read();
    if (keep) this.recallAnswers.set(key, text);
    return text;
  }

  /** Tokens the active replacements save. */
  get savedTokens(): number {
    return this.saved;
  }

  get replacementCount(): number {
    return this.replacements.size;
  }

  private newModel(): SessionModel {
    return new SessionModel({
      sessionId: this.id,
      tokenCounter: this.deps.tokenCounter,
      reserveRatio: this.deps.reserveRatio,
      ...(this.deps.budgetTokens !== undefined ? { budgetTokens: this.deps.budgetTokens } : {}),
    });
  }
}

/**
 * The model as the planner should see it: sections holding any of `ids` (the last exchange,
 * which goes to the provider exactly as the agent sent it) count as anchors.
 */
function withAnchors(model: SessionModel, ids: ReadonlySet<string>): CompactableModel {
  const sections = model.sections().map((s) => (s.anchor || !s.messageIds.some((id) => ids.has(id)) ? s : { ...s, anchor: true }));
  const byId = new Map(sections.map((s) => [s.id, s]));
  return {
    version: model.version,
    sessionId: model.sessionId,
    messages: () => model.messages(),
    sections: () => sections,
    section: (id) => byId.get(id),
    messagesOf: (id) => model.messagesOf(id),
    tokens: () => model.tokens(),
    headroom: () => model.headroom(),
    budget: () => model.budget(),
    goal: () => model.goal(),
    calibration: () => model.calibration(),
  } as CompactableModel;
}

/** The list a format's conversation lives in, as forwarded. */
function listOf(format: ProviderFormatName, body: JsonObject): unknown[] {
  const v = format === 'openai-responses' ? body['input'] : body['messages'];
  return Array.isArray(v) ? v : [];
}

/**
 * The live context of one session as entries (messages) and section records, with every
 * index kept incrementally: token total, term statistics, tool-call pairing, density groups.
 * Internal to the model; `SessionModel` is the public face.
 */
import type { Message } from './messages.js';
import { isAcknowledgement, isDecisionText, isStandingConstraint, isAgentSummary } from './classify.js';
import { SharedBins, similarity, type DensityFeatures } from './density.js';

import { analyseFragmentText, forgetDigest, MIN_CACHED_TEXT_CHARS, noteDigest, withParts, type DerivedDataCache, type TextAnalysis } from './derived.js';
import {
  analysisPartsOf,
  buildEntry,
  countAs,
  computeFeatures,
  deriveFragment,
  fragmentText,
  groupKeyOf,
  projectEntry,
  projectFragments,
  recomputeStats,
  rehomeOverhead,
  type Entry,
  type Fragment,
  type SectionBase,
  type SectionRec,
} from './fragments.js';
import { EMPTY_TERM_VECTOR, TermIndex } from './relevance.js';
import type { TokenCountCache, TokenCounter } from './tokens.js';

/** Messages copied into lists handed out by `messages()` in this process (for tests of its cost). */
let messagesCopied = 0;

/** How many messages `LiveContext.messages()` has copied so far in this process. */
export function messageListCopies(): number {
  return messagesCopied;
}

/** From this many stale sections in a group, their matches are searched through shared bins. */
const SHARED_BINS_FROM = 16;

function setBest(rec: SectionRec, best: SectionRec | undefined, sim: number): void {
  const before = rec.maxNewerRec;
  if (before?.argmaxOf?.delete(rec) && before.argmaxOf.size === 0) before.argmaxOf = undefined;
  rec.maxNewerRec = best;
  rec.maxNewer = sim;
  if (best) (best.argmaxOf ??= new Set()).add(rec);
}

/** Index of the first of `members` (sorted by seq) with a seq above `seq`. */
function firstNewer(members: readonly SectionRec[], seq: number): number {
  let lo = 0;
  let hi = members.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((members[mid] as SectionRec).seq <= seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Drops a section's cached message list (its fragments changed). */
function forgetMessages(rec: SectionRec): void {
  rec.messages = undefined;
  rec.messageIds = undefined;
}

export class LiveContext {
  /** Live entries in context order. */
  entries: Entry[] = [];
  readonly entryById = new Map<string, Entry>();
  /** Message id → the live summary entry that holds it now (so a truncate can still find it), through summaries summarized again. */
  readonly replacedInto = new Map<string, Entry>();
  /**
   * Summary entry → the ids `replacedInto` maps to it, so they leave with it (the summary
   * replaced in turn, or truncated): a dead summary kept as a target would hold its message,
   * fragments and derived data for the session's lifetime, one per applied edit, for nothing
   * (a truncate finds a dead entry and leaves the context as it is, as for an unknown id).
   */
  private readonly replacedIdsOf = new Map<Entry, string[]>();
  /** Section records in context order (may hold dead records until compactRecs()). */
  recs: SectionRec[] = [];
  private recsHaveDead = false;
  readonly recById = new Map<string, SectionRec>();
  private readonly callSections = new Map<string, SectionRec>();
  private readonly orphans = new Map<string, SectionRec>();
  private readonly groups = new Map<string, Set<SectionRec>>();
  private readonly featuresDirty = new Set<SectionRec>();
  /** Sections whose best newer match must be searched again. */
  private readonly densityStale = new Set<SectionRec>();
  readonly index = new TermIndex();
  /**
   * Whether the fragments' derived data (term stats, fingerprints) and the term index exist:
   * false until a scoring pass first needs them (`ensureDerived`), so a session built and never
   * planned (a first scan, a status read) never computes them; from then on kept up to date
   * at each change, until `dropDerived`.
   */
  private derived = false;
  private nextSectionNo = 1;
  private nextSeq = 1;
  totalTokens = 0;
  /**
   * The live messages as last projected, grown in place by an append (amortised O(1)); dropped
   * by any other change. Never handed out: readers get a frozen copy (`messages()`).
   */
  private messageList: Message[] | undefined;
  /** The frozen copy last handed out by `messages()`; stale once `messageList` grows past it. */
  private messageView: readonly Message[] | undefined;
  /** Sections with a seq below this belong to a turn that ended (turn-end event); 0 = open. */
  turnEndSeq = 0;

  constructor(
    private readonly counter: TokenCounter,
    private readonly tokenCache?: TokenCountCache,
    private readonly derivedCache?: DerivedDataCache,
  ) {}

  /**
   * Computes the derived data of every live fragment (read from the derived cache when it has
   * it, else analysed and handed to the cache) and indexes every live section's terms. Once
   * done, changes keep it up to date; a no-op until `dropDerived`.
   */
  ensureDerived(): void {
    if (this.derived) return;
    const frags: Fragment[] = [];
    for (const e of this.entries) for (const f of e.frags) if (f.section !== undefined && f.stats === undefined) frags.push(f);
    this.analyse(frags);
    for (const rec of this.recs) {
      if (!rec.live) continue;
      rec.stats = recomputeStats(rec, this.index);
      this.index.add(rec.stats);
    }
    this.derived = true;
  }

  /**
   * Forgets every fragment's derived data and the term index (memory pressure): the next
   * scoring pass derives them again (from the derived cache, when it holds them).
   */
  dropDerived(): void {
    if (!this.derived) return;
    for (const e of this.entries) {
      forgetDigest(e.message);
      for (const f of e.frags) {
        f.stats = undefined;
        f.features = undefined;
      }
    }
    for (const rec of this.recs) {
      rec.stats = EMPTY_TERM_VECTOR;
      rec.features = undefined;
      for (const x of rec.argmaxOf ?? []) x.maxNewerRec = undefined;
      rec.argmaxOf = undefined;
      rec.maxNewerRec = undefined;
      rec.maxNewer = 0;
      if (rec.live) this.featuresDirty.add(rec);
    }
    this.densityStale.clear();
    this.index.clear();
    this.derived = false;
  }

  /** Derived data for fragments: cached analyses looked up in one batch, the rest computed and cached. */
  private analyse(frags: readonly Fragment[]): void {
    if (frags.length === 0) return;
    const texts = frags.map(fragmentText);
    const asked = this.derivedCache ? texts.flatMap((t, i) => (t.length >= MIN_CACHED_TEXT_CHARS ? [i] : [])) : [];
    const hits = asked.length > 0 ? (this.derivedCache?.getMany(asked.map((i) => texts[i] as string)) ?? []) : [];
    const known = new Map<number, TextAnalysis | undefined>(asked.map((i, k) => [i, hits[k]]));
    // What to write back, by text: a text met twice (two fragments, maybe wanting different
    // optional parts) is analysed once and written once, with every part either wanted.
    const fresh = new Map<string, TextAnalysis>();
    frags.forEach((f, i) => {
      const text = texts[i] as string;
      const parts = analysisPartsOf(f);
      // Only texts asked of the cache are ever in `fresh`, and it is empty while every one asked
      // was found whole: no lookup then (a Map lookup hashes the whole text; in a cold plan from
      // the cache that was a twentieth of the plan).
      const had = (fresh.size > 0 && known.has(i) ? fresh.get(text) : undefined) ?? known.get(i);
      const analysis = had ? withParts(had, text, parts) : analyseFragmentText(text, parts);
      if (analysis !== had && known.has(i)) fresh.set(text, analysis);
      deriveFragment(f, analysis, this.index);
      noteDigest(f.entry.message, text, analysis);
    });
    if (fresh.size > 0) this.derivedCache?.setMany([...fresh].map(([text, analysis]) => ({ text, analysis })));
  }

  /**
   * The live messages in order (split messages show only their live parts). Kept between
   * calls (an append extends it, other changes drop it), so a re-plan sees the same message
   * objects as the plan before.
   */
  messages(): readonly Message[] {
    if (!this.messageList) {
      const out: Message[] = [];
      for (const e of this.entries) {
        const m = projectEntry(e);
        if (m) out.push(m);
      }
      this.messageList = out;
    }
    if (this.messageView?.length !== this.messageList.length) {
      messagesCopied += this.messageList.length;
      this.messageView = Object.freeze(this.messageList.slice());
    }
    return this.messageView;
  }

  /** Forgets the projected message list (a change other than an append). */
  private dropMessageList(): void {
    this.messageList = undefined;
    this.messageView = undefined;
  }

  /** The messages of one section; for a call split out of a multi-call message, a view with only that call. */
  messagesOf(rec: SectionRec): readonly Message[] {
    rec.messages ??= Object.freeze(this.projectRec(rec));
    return rec.messages;
  }

  private projectRec(rec: SectionRec): Message[] {
    const only = rec.frags.length === 1 ? rec.frags[0] : undefined;
    if (only) return [only.entry.frags.length === 1 ? only.entry.message : projectFragments(only.entry.message, [only])];
    const byEntry = new Map<Entry, Fragment[]>();
    for (const f of rec.frags) {
      const list = byEntry.get(f.entry);
      if (list) list.push(f);
      else byEntry.set(f.entry, [f]);
    }
    const out: Message[] = [];
    for (const [entry, frags] of byEntry) {
      out.push(frags.length === entry.frags.length ? entry.message : projectFragments(entry.message, frags));
    }
    return out;
  }

  /** The latest live real user instruction. */
  goal(): SectionRec | undefined {
    for (let i = this.recs.length - 1; i >= 0; i--) {
      const rec = this.recs[i];
      if (rec?.live && rec.base === 'instruction') return rec;
    }
    return undefined;
  }

  /**
   * Takes `recs` out of the context and puts `message` (a summary) in their place: at the first
   * entry they touch, or just after it when that entry keeps other live parts. Returns the
   * summary's section record. `known`: the message's text counts when they are known (`buildEntry`).
   */
  replace(recs: readonly SectionRec[], message: Message, extra: Pick<SectionRec, 'summary'>, known?: readonly number[]): SectionRec {
    this.dropMessageList();
    const doomed = new Set(recs);
    let at = this.entries.findIndex((e) => e.frags.some((f) => f.section !== undefined && doomed.has(f.section)));
    const firstEntry = this.entries[at];
    if (firstEntry && firstEntry.frags.some((f) => f.section !== undefined && !doomed.has(f.section))) at++;
    // (a rebuild from this model's messages counts the summary as here: `countAs`)
    if (known) countAs(message, known);
    const entry = buildEntry(message, this.counter, this.tokenCache);
    if (this.derived) this.analyse(entry.frags);
    const goneEntries = new Set<Entry>();
    for (const rec of recs) {
      for (const f of rec.frags) {
        f.section = undefined;
        if (f.entry.frags.every((x) => x.section === undefined)) goneEntries.add(f.entry);
      }
      this.dropSection(rec);
    }
    for (const rec of recs) {
      for (const f of rec.frags) if (!goneEntries.has(f.entry)) this.totalTokens += rehomeOverhead(f.entry);
    }
    const before = this.entries.slice(0, at).filter((e) => !goneEntries.has(e));
    const after = this.entries.slice(at).filter((e) => !goneEntries.has(e));
    this.entries = [...before, entry, ...after];
    const absorbed: string[] = [];
    for (const e of goneEntries) {
      // a summary summarized again: the messages it holds are in the new summary now (not an id
      // another summary took since: one re-appended after a rewind into this one)
      const inner = (this.replacedIdsOf.get(e) ?? []).filter((id) => this.replacedInto.get(id) === e);
      this.forgetEntry(e);
      for (const id of [e.message.id, ...inner]) {
        this.replacedInto.set(id, entry);
        absorbed.push(id);
      }
    }
    this.replacedIdsOf.set(entry, absorbed);
    this.entryById.set(message.id, entry);
    const rec = this.newRec('summary', entry.frags, extra);
    this.compactRecs();
    // Sections stay in context order: the summary goes before the first section that starts after it.
    const pos = new Map<Entry, number>();
    this.entries.forEach((e, i) => pos.set(e, i));
    const summaryPos = pos.get(entry) ?? this.entries.length;
    let recAt = this.recs.findIndex((r) => Math.min(...r.frags.map((f) => pos.get(f.entry) ?? Infinity)) > summaryPos);
    if (recAt < 0) recAt = this.recs.length;
    this.recs.splice(recAt, 0, rec);
    this.registerRec(rec);
    return rec;
  }

  /**
   * Computes density features of the sections changed since the last call and updates each
   * section's highest similarity to a newer section of its group. Cost: O(group size) per
   * changed section, plus O(group size) per section whose best match changed or left.
   */
  refreshDensity(): void {
    this.compactRecs();
    const dirty = [...this.featuresDirty].filter((r) => r.live).sort((a, b) => a.seq - b.seq);
    this.featuresDirty.clear();
    for (const rec of dirty) {
      rec.features = computeFeatures(rec);
      // Whoever matched this section best must look again (its text changed).
      for (const x of rec.argmaxOf ?? []) this.densityStale.add(x);
      this.densityStale.add(rec);
    }
    // Each group's live members in seq order (a group's set is filled in creation order, but a
    // member may have been re-added); built once per pass, for the groups touched.
    const ordered = new Map<string, SectionRec[]>();
    const membersOf = (key: string): SectionRec[] => {
      let list = ordered.get(key);
      if (!list) {
        list = [...(this.groups.get(key) ?? [])].sort((a, b) => a.seq - b.seq);
        ordered.set(key, list);
      }
      return list;
    };
    // Members that keep their best match (not stale): a changed newer section may beat it.
    // After a restart every section is stale and this pass has nothing to do.
    const keeping = new Map<string, SectionRec[]>();
    for (const rec of dirty) {
      if (!rec.features) continue;
      let keepers = keeping.get(rec.groupKey);
      if (!keepers) {
        keepers = membersOf(rec.groupKey).filter((r) => r.features !== undefined && !this.densityStale.has(r));
        keeping.set(rec.groupKey, keepers);
      }
      for (const older of keepers) {
        if (older.seq >= rec.seq) break;
        if (!older.features) continue;
        const sim = similarity(older.features, rec.features);
        if (sim > older.maxNewer) setBest(older, rec, sim);
      }
    }
    // Stale sections look for their best newer match again: among all newer members, or — when
    // many of a group are stale (a restart) — among those sharing a bin value (the rest are 0).
    const staleBy = new Map<string, SectionRec[]>();
    for (const rec of this.densityStale) {
      if (!rec.live || !rec.features) continue;
      const list = staleBy.get(rec.groupKey);
      if (list) list.push(rec);
      else staleBy.set(rec.groupKey, [rec]);
    }
    for (const [key, stale] of staleBy) {
      const members = membersOf(key);
      const shared = stale.length >= SHARED_BINS_FROM ? new SharedBins(members.map((m) => m.features)) : undefined;
      for (const rec of stale) {
        const features = rec.features as DensityFeatures;
        setBest(rec, undefined, 0);
        const from = firstNewer(members, rec.seq);
        if (shared) {
          const { at, sim } = shared.bestFrom(from, features);
          if (at >= 0) setBest(rec, members[at], sim);
          continue;
        }
        for (let i = from; i < members.length; i++) {
          const newer = members[i] as SectionRec;
          if (!newer.features) continue;
          const sim = similarity(features, newer.features);
          if (sim > rec.maxNewer) setBest(rec, newer, sim);
        }
      }
    }
    this.densityStale.clear();
  }

  /** An entry leaves the context: its id, and the ids replaced into it (a summary), are no longer found. */
  private forgetEntry(e: Entry): void {
    e.live = false;
    if (this.entryById.get(e.message.id) === e) this.entryById.delete(e.message.id);
    const ids = this.replacedIdsOf.get(e);
    if (!ids) return;
    this.replacedIdsOf.delete(e);
    for (const id of ids) if (this.replacedInto.get(id) === e) this.replacedInto.delete(id);
  }

  /** Forgets a leaving section's density links; sections that matched it best are recomputed. */
  private unlinkDensity(rec: SectionRec): void {
    for (const x of rec.argmaxOf ?? []) {
      x.maxNewerRec = undefined;
      x.maxNewer = 0;
      this.densityStale.add(x);
    }
    rec.argmaxOf = undefined;
    setBest(rec, undefined, 0);
    this.densityStale.delete(rec);
  }

  /** `counts`: the message's token counts when already known (a batch looked up by `countMessages`). */
  appendMessage(message: Message, counts?: readonly number[]): void {
    const entry = buildEntry(message, this.counter, this.tokenCache, counts);
    if (this.derived) this.analyse(entry.frags);
    this.entries.push(entry);
    this.entryById.set(message.id, entry);
    // an appended message is whole (no part of it compacted yet): the list grows by itself
    this.messageList?.push(message);

    if (message.role === 'tool') {
      const frag = entry.frags[0] as Fragment;
      const callId = message.toolCallId;
      const owner = callId !== undefined ? this.callSections.get(callId) : undefined;
      if (owner) {
        this.attach(owner, frag);
        if (owner.toolName === undefined && message.toolName !== undefined) owner.toolName = message.toolName;
        return;
      }
      const orphanOwner = callId !== undefined ? this.orphans.get(callId) : undefined;
      if (orphanOwner) {
        this.attach(orphanOwner, frag);
        return;
      }
      const rec = this.newRec('orphan', [frag], {
        ...(callId !== undefined ? { callId } : {}),
        ...(message.toolName !== undefined ? { toolName: message.toolName } : {}),
      });
      this.pushRec(rec);
      if (callId !== undefined) this.orphans.set(callId, rec);
      return;
    }

    if (message.role === 'system') {
      this.pushRec(this.newRec(message.isSummary ? 'summary' : 'system', entry.frags));
      return;
    }
    const hasCalls = entry.frags.some((f) => f.part === 'call');
    if (!hasCalls && isAgentSummary(message)) {
      this.pushRec(this.newRec('summary', entry.frags));
      return;
    }
    if (message.role === 'user') {
      const ack = isAcknowledgement(message.text);
      const base: SectionBase = message.injected || ack ? 'user-message' : 'instruction';
      const constraint = base === 'instruction' && isStandingConstraint(message.text);
      this.pushRec(this.newRec(base, entry.frags, { ack, constraint }));
      return;
    }

    // Assistant: its text (or reasoning) is one section, each tool call another.
    for (const frag of entry.frags) {
      if (frag.part === 'call' && frag.call) {
        const call = frag.call;
        const orphan = this.orphans.get(call.id);
        if (orphan?.live) {
          // The result came first: the call adopts it.
          this.orphans.delete(call.id);
          const results = [...orphan.frags];
          this.dropSection(orphan);
          this.compactRecs();
          const rec = this.newRec('call', [frag, ...results], { callId: call.id, toolName: call.name });
          this.pushRec(rec);
          this.callSections.set(call.id, rec);
          continue;
        }
        const rec = this.newRec('call', [frag], { callId: call.id, toolName: call.name });
        this.pushRec(rec);
        this.callSections.set(call.id, rec);
        continue;
      }
      const hasText = message.text.trim().length > 0;
      const base: SectionBase = !hasText && (message.reasoning ?? '').trim().length > 0 ? 'reasoning' : 'assistant-text';
      this.pushRec(this.newRec(base, [frag], { decision: base === 'assistant-text' && isDecisionText(message.text) }));
    }
  }

  newRec(
    base: SectionBase,
    frags: Fragment[],
    extra: Partial<Pick<SectionRec, 'callId' | 'toolName' | 'ack' | 'decision' | 'constraint' | 'summary'>> = {},
  ): SectionRec {
    const rec: SectionRec = {
      id: `s${this.nextSectionNo++}`,
      seq: this.nextSeq++,
      base,
      frags: [],
      tokens: 0,
      stats: EMPTY_TERM_VECTOR,
      ack: false,
      decision: false,
      constraint: false,
      features: undefined,
      maxNewer: 0,
      maxNewerRec: undefined,
      argmaxOf: undefined,
      groupKey: groupKeyOf(base, extra.toolName),
      live: true,
      messages: undefined,
      messageIds: undefined,
      ...extra,
    };
    for (const f of frags) {
      f.section = rec;
      rec.frags.push(f);
      rec.tokens += f.tokens;
    }
    if (this.derived) rec.stats = recomputeStats(rec, this.index);
    return rec;
  }

  pushRec(rec: SectionRec): void {
    this.recs.push(rec);
    this.registerRec(rec);
  }

  /** Indexes a new live section: tokens, term stats, group, density features (lazily). */
  registerRec(rec: SectionRec): void {
    this.recById.set(rec.id, rec);
    this.totalTokens += rec.tokens;
    if (this.derived) this.index.add(rec.stats);
    let g = this.groups.get(rec.groupKey);
    if (!g) this.groups.set(rec.groupKey, (g = new Set()));
    g.add(rec);
    this.featuresDirty.add(rec);
  }

  /** A section's fragments changed: its term stats are merged again (once derived). */
  private reindex(rec: SectionRec): void {
    if (!this.derived) return;
    this.index.remove(rec.stats);
    rec.stats = recomputeStats(rec, this.index);
    this.index.add(rec.stats);
  }

  private attach(rec: SectionRec, frag: Fragment): void {
    frag.section = rec;
    rec.frags.push(frag);
    forgetMessages(rec);
    rec.tokens += frag.tokens;
    this.totalTokens += frag.tokens;
    this.reindex(rec);
    this.featuresDirty.add(rec);
  }

  /** Removes a fragment from its section (truncation); drops the section when it empties. */
  private detach(frag: Fragment): void {
    const rec = frag.section;
    if (!rec) return;
    this.dropMessageList();
    frag.section = undefined;
    const i = rec.frags.indexOf(frag);
    if (i >= 0) rec.frags.splice(i, 1);
    forgetMessages(rec);
    if (rec.frags.length === 0) {
      rec.tokens -= frag.tokens;
      // dropSection subtracts rec.tokens (now 0) — account for the fragment here.
      this.totalTokens -= frag.tokens;
      this.dropSection(rec);
      return;
    }
    rec.tokens -= frag.tokens;
    this.totalTokens -= frag.tokens;
    this.reindex(rec);
    if (frag.part === 'call' && rec.callId !== undefined && this.callSections.get(rec.callId) === rec) {
      this.callSections.delete(rec.callId);
      this.orphans.set(rec.callId, rec);
      rec.base = 'orphan';
    }
    this.featuresDirty.add(rec);
  }

  /** Takes a section out of every index (its fragments are already detached or being replaced). */
  dropSection(rec: SectionRec): void {
    if (!rec.live) return;
    rec.live = false;
    this.recsHaveDead = true;
    this.recById.delete(rec.id);
    this.totalTokens -= rec.tokens;
    if (this.derived) this.index.remove(rec.stats);
    const g = this.groups.get(rec.groupKey);
    if (g) {
      g.delete(rec);
    }
    this.unlinkDensity(rec);
    this.featuresDirty.delete(rec);
    if (rec.callId !== undefined) {
      if (this.callSections.get(rec.callId) === rec) this.callSections.delete(rec.callId);
      if (this.orphans.get(rec.callId) === rec) this.orphans.delete(rec.callId);
    }
  }

  compactRecs(): void {
    if (!this.recsHaveDead) return;
    this.recs = this.recs.filter((r) => r.live);
    this.recsHaveDead = false;
  }

  truncate(keepThroughId: string | null): void {
    if (keepThroughId === null) {
      this.clear();
      return;
    }
    let keep = this.entryById.get(keepThroughId);
    if (!keep || !keep.live) keep = this.replacedInto.get(keepThroughId);
    if (!keep || !keep.live) return; // unknown branch point: the context is left as it is
    const at = this.entries.lastIndexOf(keep);
    if (at < 0) return;
    const dropped = this.entries.slice(at + 1);
    this.entries = this.entries.slice(0, at + 1);
    this.dropMessageList();
    for (const e of dropped) {
      this.forgetEntry(e);
      for (const f of e.frags) this.detach(f);
    }
    this.compactRecs();
    // The turn at the end is open again until the next turn-end or instruction.
    this.turnEndSeq = 0;
  }

  clear(): void {
    this.dropMessageList();
    for (const e of this.entries) e.live = false;
    this.entries = [];
    this.entryById.clear();
    this.replacedInto.clear();
    this.replacedIdsOf.clear();
    for (const r of this.recs) r.live = false;
    this.recs = [];
    this.recsHaveDead = false;
    this.recById.clear();
    this.callSections.clear();
    this.orphans.clear();
    this.groups.clear();
    this.featuresDirty.clear();
    this.densityStale.clear();
    this.index.clear();
    this.totalTokens = 0;
    this.turnEndSeq = 0;
  }

  /** A turn ended: the sections created so far belong to a finished turn. */
  endTurn(): void {
    this.turnEndSeq = this.nextSeq;
  }
}

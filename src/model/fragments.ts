/**
 * Internal bookkeeping of the session model: live message entries, the fragments a message is
 * split into (an assistant message with N tool calls has a text fragment and N call
 * fragments), and section records. Not exported from the barrel.
 */
import type { Message, ToolCall } from './messages.js';
import { mergeFeatures, type DensityFeatures } from './density.js';
import { looksLikeStackTrace } from '../text/index.js';
import type { TermIndex, TermVector } from './relevance.js';
import type { AnalysisParts, TextAnalysis } from './derived.js';
import { countTexts, countTextsMany, IMAGE_TOKEN_ESTIMATE, MESSAGE_OVERHEAD_TOKENS, type TokenCountCache, type TokenCounter } from './tokens.js';

export type FragmentPart = 'whole' | 'text' | 'call' | 'result';

/** One message in the live context (or a contextd summary standing in for several). */
export interface Entry {
  readonly message: Message;
  readonly frags: Fragment[];
  live: boolean;
}

/**
 * The part of a message owned by exactly one section. Its tokens are counted once, at ingest;
 * its term stats and shingle fingerprint (`derive`) once a scoring pass first needs them. Its
 * text is not kept (the message holds it: `fragmentText`).
 */
export interface Fragment {
  readonly entry: Entry;
  readonly part: FragmentPart;
  readonly call?: ToolCall;
  /** Its tokens; the message's framing overhead moves to another part when its holder is compacted away. */
  tokens: number;
  /** The part of `tokens` that is the message's framing overhead (MESSAGE_OVERHEAD_TOKENS on one fragment, else 0). */
  overhead: number;
  /** Term stats, interned in the session's index; undefined until derived. */
  stats: TermVector | undefined;
  /** Shingle fingerprint; undefined until derived. */
  features: DensityFeatures | undefined;
  /** A tool result that failed or reads like a stack trace. */
  readonly error: boolean;
  section: SectionRec | undefined;
}

export type SectionBase =
  | 'system'
  | 'instruction'
  | 'user-message'
  | 'assistant-text'
  | 'reasoning'
  | 'call'
  | 'orphan'
  | 'summary';

export interface SummaryInfo {
  readonly editId: string;
  readonly handle: string;
  readonly reason: string;
}

/** Mutable internal record behind a `Section`. */
export interface SectionRec {
  readonly id: string;
  /** Creation order; "newer" in density means a higher seq. */
  readonly seq: number;
  base: SectionBase;
  readonly frags: Fragment[];
  tokens: number;
  stats: TermVector;
  callId?: string;
  toolName?: string;
  /** User acknowledgement ("ok", "continue"). */
  ack: boolean;
  /** Assistant text states a decision / plan / conclusion. */
  decision: boolean;
  /** User text states a standing constraint, preference or convention. */
  constraint: boolean;
  features: DensityFeatures | undefined;
  /** Highest similarity to a newer live section of the same group (0 when none). */
  maxNewer: number;
  /** The newer section behind `maxNewer`. */
  maxNewerRec: SectionRec | undefined;
  /**
   * Sections whose `maxNewerRec` is this one (recomputed when this one changes or leaves);
   * undefined while there are none (most sections: an empty Set each cost ~100 bytes).
   */
  argmaxOf: Set<SectionRec> | undefined;
  groupKey: string;
  summary?: SummaryInfo;
  live: boolean;
  /**
   * The section's messages as `messagesOf` returns them, built on first read and dropped when
   * its fragments change: the same array (and the same per-call view objects) until then, so
   * whatever the planner memoizes per message or message list survives across plans.
   */
  messages: readonly Message[] | undefined;
  /** Distinct ids of its messages, cached like `messages`. */
  messageIds: readonly string[] | undefined;
}

export function groupKeyOf(base: SectionBase, toolName: string | undefined): string {
  return base === 'call' || base === 'orphan' ? `tool:${toolName ?? '?'}` : `kind:${base}`;
}

export function hasPart(rec: SectionRec, part: FragmentPart): boolean {
  return rec.frags.some((f) => f.part === part);
}

function derivedOf<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('fragment read before its derived data was computed');
  return value;
}

/** Term stats of a section: its fragment's own (shared, never mutated) or a fresh merge. Its fragments are derived. */
export function recomputeStats(rec: SectionRec, terms: TermIndex): TermVector {
  const only = rec.frags.length === 1 ? rec.frags[0] : undefined;
  if (only) return derivedOf(only.stats);
  return terms.merge(rec.frags.map((f) => derivedOf(f.stats)));
}

/** Density features of a section: its fragments' fingerprints merged (no text is re-read). Its fragments are derived. */
export function computeFeatures(rec: SectionRec): DensityFeatures {
  return mergeFeatures(rec.frags.map((f) => derivedOf(f.features)));
}

/** The text a fragment's derived data is computed from (see `buildEntry`). */
export function fragmentText(frag: Fragment): string {
  const { message } = frag.entry;
  if (frag.part === 'call' && frag.call) return `${frag.call.name} ${frag.call.arguments}`;
  if (frag.part === 'result') return message.text;
  return message.reasoning ? `${message.text}\n${message.reasoning}` : message.text;
}

const WHOLE_TEXT_PARTS: AnalysisParts = Object.freeze({ termKeys: true, lineHashes: false });
const RESULT_PARTS: AnalysisParts = Object.freeze({ termKeys: true, lineHashes: true });
const NO_PARTS: AnalysisParts = Object.freeze({ termKeys: false, lineHashes: false });

/**
 * The optional analysis parts a fragment's readers use: the content-term keys of a message's
 * whole text (a message without calls or reasoning, a tool result), the line hashes of a tool
 * result. A call's or a text-and-reasoning fragment's text is no message's whole text: neither.
 */
export function analysisPartsOf(frag: Fragment): AnalysisParts {
  if (frag.part === 'result') return RESULT_PARTS;
  return frag.part === 'whole' && !frag.entry.message.reasoning ? WHOLE_TEXT_PARTS : NO_PARTS;
}

/** Gives a fragment its derived data, its terms interned in the session's `terms`. */
export function deriveFragment(frag: Fragment, analysis: TextAnalysis, terms: TermIndex): void {
  frag.stats = terms.intern(analysis.stats);
  frag.features = analysis.features;
}

/**
 * Splits a message into fragments, counting its tokens exactly once:
 * text + reasoning + each tool call's name and arguments + MESSAGE_OVERHEAD_TOKENS +
 * imageCount × IMAGE_TOKEN_ESTIMATE. The overhead and image estimate go to the text
 * fragment, or to the first call fragment when there is no text. Derived data (term stats,
 * fingerprints) is left for `deriveFragment`. With a `cache`, the counts of
 * a message seen before (same texts) are read back instead.
 */
/** The texts of a message that are counted, in order: text, reasoning, then each call's name and arguments. */
export function countedTexts(message: Message): string[] {
  const calls = message.role === 'assistant' ? (message.toolCalls ?? []) : [];
  return [message.text, message.reasoning ?? '', ...calls.flatMap((c) => [c.name, c.arguments])];
}

/** The counts of many messages' texts (see `countedTexts`), cached ones looked up in one batch. */
export function countMessages(messages: readonly Message[], counter: TokenCounter, cache?: TokenCountCache): number[][] {
  return countTextsMany(counter, messages.map(countedTexts), cache);
}

/**
 * Messages counted apart from their text: a summary replayed from the plan log holds its text
 * with secrets redacted but counts as made (`ReplacementSummary.tokens`). A model rebuilt from
 * its own messages (`rebaseModel`) meets the same message object and must count it the same.
 */
const countedAs = new WeakMap<Message, readonly number[]>();

/** `message` counts `counts` wherever an entry is built of it, whatever its text counts. */
export function countAs(message: Message, counts: readonly number[]): void {
  countedAs.set(message, counts);
}

/**
 * `counts`: the message's counts when already known (`countMessages`), else counted or looked up
 * here; a message given counts by `countAs` always counts those.
 */
export function buildEntry(message: Message, counter: TokenCounter, cache?: TokenCountCache, known?: readonly number[]): Entry {
  const entry: Entry = { message, frags: [], live: true };
  const fixed = MESSAGE_OVERHEAD_TOKENS + (message.imageCount ?? 0) * IMAGE_TOKEN_ESTIMATE;
  const calls = message.role === 'assistant' ? (message.toolCalls ?? []) : [];
  const mk = (part: FragmentPart, tokens: number, call?: ToolCall, error = false): Fragment => {
    const overhead = entry.frags.length === 0 ? MESSAGE_OVERHEAD_TOKENS : 0;
    return { entry, part, ...(call ? { call } : {}), tokens, overhead, stats: undefined, features: undefined, error, section: undefined };
  };
  // Every text of the message, counted (or looked up) together.
  const counts = countedAs.get(message) ?? known ?? countTexts(counter, countedTexts(message), cache);
  const at = (i: number): number => counts[i] ?? 0;
  if (message.role === 'tool') {
    const error = message.isError === true || looksLikeStackTrace(message.text);
    entry.frags.push(mk('result', at(0) + fixed, undefined, error));
    return entry;
  }
  if (calls.length === 0) {
    entry.frags.push(mk('whole', at(0) + at(1) + fixed));
    return entry;
  }
  const hasText = message.text.trim().length > 0 || (message.reasoning ?? '').trim().length > 0;
  if (hasText) {
    entry.frags.push(mk('text', at(0) + at(1) + fixed));
  }
  calls.forEach((call, i) => {
    const tokens = at(2 + 2 * i) + at(3 + 2 * i) + (!hasText && i === 0 ? fixed : 0);
    entry.frags.push(mk('call', tokens, call));
  });
  return entry;
}

/**
 * Moves the message framing overhead (held by the first fragment, see buildEntry) to the first
 * fragment still in the context when its holder left (compacted into a summary), so the live
 * count equals that of the projected message. Returns the tokens moved onto a live section.
 */
export function rehomeOverhead(entry: Entry): number {
  const holder = entry.frags.find((f) => f.overhead > 0);
  if (!holder || holder.section !== undefined) return 0;
  const heir = entry.frags.find((f) => f.section !== undefined);
  if (!heir?.section) return 0;
  const moved = holder.overhead;
  holder.overhead = 0;
  heir.overhead = moved;
  heir.tokens += moved;
  heir.section.tokens += moved;
  return moved;
}

/** The message as it stands in the live context: only the parts whose sections are still live. */
export function projectEntry(entry: Entry): Message | undefined {
  const live = entry.frags.filter((f) => f.section !== undefined);
  if (live.length === entry.frags.length) return entry.message;
  if (live.length === 0) return undefined;
  return projectFragments(entry.message, live);
}

/** A view of `message` restricted to the given fragments (all of the same entry). */
export function projectFragments(message: Message, frags: readonly Fragment[]): Message {
  const keepText = frags.some((f) => f.part !== 'call');
  const calls = frags.filter((f) => f.part === 'call' && f.call).map((f) => f.call as ToolCall);
  const { toolCalls: _calls, reasoning, imageCount, ...rest } = message;
  void _calls;
  return {
    ...rest,
    text: keepText ? message.text : '',
    ...(keepText && reasoning !== undefined ? { reasoning } : {}),
    ...(keepText && imageCount !== undefined ? { imageCount } : {}),
    ...(calls.length > 0 ? { toolCalls: calls } : {}),
  };
}

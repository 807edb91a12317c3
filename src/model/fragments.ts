/**
 * Internal bookkeeping of the session model: live message entries, the fragments a message is
 * split into (an assistant message with N tool calls has a text fragment and N call
 * fragments), and section records. Not exported from the barrel.
 */
import type { Message, ToolCall } from './messages.js';
import { densityFeatures, type DensityFeatures } from './density.js';
import { looksLikeStackTrace } from '../text/index.js';
import { IMAGE_TOKEN_ESTIMATE, MESSAGE_OVERHEAD_TOKENS, type TokenCounter } from './tokens.js';
import { termStats, mergeTermStats, type TermStats } from '../text/index.js';

export type FragmentPart = 'whole' | 'text' | 'call' | 'result';

/** One message in the live context (or a contextd summary standing in for several). */
export interface Entry {
  readonly message: Message;
  readonly frags: Fragment[];
  live: boolean;
}

/** The part of a message owned by exactly one section. Tokens and term stats are computed once. */
export interface Fragment {
  readonly entry: Entry;
  readonly part: FragmentPart;
  readonly call?: ToolCall;
  readonly tokens: number;
  /** Text used for relevance and density (never re-tokenized). */
  readonly text: string;
  readonly stats: TermStats;
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
  stats: TermStats;
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
  /** Sections whose `maxNewerRec` is this one (recomputed when this one changes or leaves). */
  readonly argmaxOf: Set<SectionRec>;
  groupKey: string;
  summary?: SummaryInfo;
  live: boolean;
}

export function groupKeyOf(base: SectionBase, toolName: string | undefined): string {
  return base === 'call' || base === 'orphan' ? `tool:${toolName ?? '?'}` : `kind:${base}`;
}

export function hasPart(rec: SectionRec, part: FragmentPart): boolean {
  return rec.frags.some((f) => f.part === part);
}

/** Concatenated text of a section, for density features. */
export function sectionText(rec: SectionRec): string {
  return rec.frags.map((f) => f.text).join('\n');
}

/** Term stats of a section: its fragment's own (shared, never mutated) or a fresh merge. */
export function recomputeStats(rec: SectionRec): TermStats {
  const only = rec.frags.length === 1 ? rec.frags[0] : undefined;
  if (only) return only.stats;
  const stats: TermStats = { tf: new Map(), length: 0 };
  for (const f of rec.frags) mergeTermStats(stats, f.stats);
  return stats;
}

export function computeFeatures(rec: SectionRec): DensityFeatures {
  return densityFeatures(sectionText(rec));
}

function count(counter: TokenCounter, text: string | undefined): number {
  return text ? counter.count(text) : 0;
}

/**
 * Splits a message into fragments, counting its tokens exactly once:
 * text + reasoning + each tool call's name and arguments + MESSAGE_OVERHEAD_TOKENS +
 * imageCount × IMAGE_TOKEN_ESTIMATE. The overhead and image estimate go to the text
 * fragment, or to the first call fragment when there is no text.
 */
export function buildEntry(message: Message, counter: TokenCounter): Entry {
  const entry: Entry = { message, frags: [], live: true };
  const fixed = MESSAGE_OVERHEAD_TOKENS + (message.imageCount ?? 0) * IMAGE_TOKEN_ESTIMATE;
  const calls = message.role === 'assistant' ? (message.toolCalls ?? []) : [];
  const textAndReasoning = message.reasoning ? `${message.text}\n${message.reasoning}` : message.text;
  const mk = (part: FragmentPart, tokens: number, text: string, call?: ToolCall, error = false): Fragment => ({
    entry,
    part,
    ...(call ? { call } : {}),
    tokens,
    text,
    stats: termStats(text),
    error,
    section: undefined,
  });
  if (message.role === 'tool') {
    const error = message.isError === true || looksLikeStackTrace(message.text);
    entry.frags.push(mk('result', count(counter, message.text) + fixed, message.text, undefined, error));
    return entry;
  }
  if (calls.length === 0) {
    entry.frags.push(mk('whole', count(counter, message.text) + count(counter, message.reasoning) + fixed, textAndReasoning));
    return entry;
  }
  const hasText = message.text.trim().length > 0 || (message.reasoning ?? '').trim().length > 0;
  if (hasText) {
    entry.frags.push(mk('text', count(counter, message.text) + count(counter, message.reasoning) + fixed, textAndReasoning));
  }
  calls.forEach((call, i) => {
    const tokens = count(counter, call.name) + count(counter, call.arguments) + (!hasText && i === 0 ? fixed : 0);
    entry.frags.push(mk('call', tokens, `${call.name} ${call.arguments}`, call));
  });
  return entry;
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

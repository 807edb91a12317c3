/**
 * The deterministic extractive summarizer (default; no network). It keeps, in order of
 * priority: constraints and instructions the user gave, exception / error lines (with the
 * first project frame of a trace), facts that later turns mention (`keyTerms`), commands run
 * and their outcome, file paths read or edited, config values (`key=value`, `key: value`),
 * URLs, identifiers, and the conclusion (last sentences) of the assistant's reasoning.
 * Output is bounded by `maxTokens` (≈ 3.5 chars per token).
 */
import type { Message, ToolCall } from '../../model/messages.js';
import { traceEssentials } from '../detectors/verbose-error-trace.js';
import {
  clip,
  countFrames,
  extractConfigValues,
  extractConstraints,
  extractErrorLines,
  extractIdentifiers,
  extractPaths,
  extractUrls,
  lastSentences,
  sentences,
  stripDanglingRefs,
  uniq,
} from '../../text/index.js';
import { describeCall, describeEdits, describeOutcome, editGists, isFileEdit, resultText, toolOutcome } from '../outcome.js';
import { toolAction } from '../../model/toolargs.js';
import { compactionNoteBody, isAgentSummary } from '../../model/classify.js';
import { imageNote, isConversational, spanSummary } from './span.js';
import { memoMessage } from '../memo.js';

export { imageNote } from './span.js';
import type { Summarizer, SummarizeInput } from '../types.js';

export const DEFAULT_SUMMARY_TOKENS = 300;
export const CHARS_PER_TOKEN = 3.5;

/** Groups in the order they are printed. */
const GROUPS = ['pointer', 'user', 'instructions', 'errors', 'edits', 'ran', 'paths', 'values', 'refs', 'conclusion'] as const;
type Group = (typeof GROUPS)[number];
const LABEL: Record<Group, string> = {
  pointer: '',
  user: 'User said',
  instructions: 'Instructions',
  errors: 'Errors',
  edits: 'Edits',
  ran: 'Ran',
  paths: 'Paths',
  values: 'Values',
  refs: 'Refs',
  conclusion: 'Conclusion',
};

interface Fact {
  readonly group: Group;
  readonly text: string;
  /** Higher is kept first. */
  readonly priority: number;
  /** Position in the input, for stable ordering. */
  readonly pos: number;
  /** An item of the heading fact at this position: printed only under it. */
  readonly under?: number;
  /**
   * A heading of items (`under` this fact): printed only with at least one of them; with none
   * kept, this text is printed instead (or nothing, when unset), never a heading of nothing.
   */
  readonly alone?: string;
}

/** The words of a fact a key term is matched against (what `collectFacts` calls "mentioned"). */
function termCandidates(text: string): string[] {
  const out: string[] = [];
  for (const m of text.toLowerCase().matchAll(/[a-z_$][\w$.-]{3,60}/g)) out.push(m[0].replace(/[.-]+$/, ''));
  return out;
}

/**
 * A fact of one message before the key terms of an input are known: its text is final and
 * its candidate words are found once, so the facts of a message are derived once however many
 * plans summarize it (a re-plan changes key terms and budgets, not messages).
 */
interface RawFact {
  readonly group: Group;
  readonly text: string;
  readonly priority: number;
  readonly words: readonly string[];
  /** When set, the fact is kept only if a key term is among these words (of the untrimmed text). */
  readonly gate?: readonly string[];
}

type Add = (g: Group, t: string, p: number, gate?: string) => void;

/** Raw facts in the order `messageFacts` adds them (empty texts dropped, as `collectFacts` drops them). */
function rawFactsOf(m: Message, isLastAssistant: boolean, call: ToolCall | undefined, failed: ReadonlySet<string>): readonly RawFact[] {
  const compute = (): RawFact[] => {
    const out: RawFact[] = [];
    messageFacts(m, (group, text, priority, gate) => {
      // never point at text the reader no longer has ("see above")
      const t = stripDanglingRefs(text.trim());
      if (t.length > 0) out.push({ group, text: t, priority, words: termCandidates(t), ...(gate !== undefined ? { gate: termCandidates(gate) } : {}) });
    }, isLastAssistant, call, failed);
    return out;
  };
  // the facts of a message's calls depend on which of them failed (their results are other messages)
  const failedHere = (m.toolCalls ?? []).filter((c) => failed.has(c.id)).map((c) => c.id);
  const memo = memoMessage(m, `extractive-facts:${isLastAssistant ? 1 : 0}:${call?.id ?? ''}:${failedHere.join(',')}`, () => ({ call, facts: compute() }));
  // a call of the same id but another object (never within one session): derived afresh
  return memo.call === call ? memo.facts : compute();
}

/** Collect candidate facts of one summarize input. */
export function collectFacts(input: SummarizeInput): Fact[] {
  const facts: Fact[] = [];
  const terms = new Set((input.keyTerms ?? []).map((t) => t.toLowerCase()));
  const mentioned = (words: readonly string[]): boolean => terms.size > 0 && words.some((w) => terms.has(w));
  let pos = 0;
  const push = (f: RawFact, heading?: Heading): void => {
    if (f.gate && !mentioned(f.gate)) return;
    facts.push({ group: f.group, text: f.text, priority: f.priority + (mentioned(f.words) ? 40 : 0), pos: pos++, ...heading });
  };
  pointerFacts(input, (text, priority, heading) => {
    const t = stripDanglingRefs(text.trim());
    if (t.length === 0) return undefined;
    push({ group: 'pointer', text: t, priority, words: termCandidates(t) }, heading);
    return pos - 1;
  });
  const calls = new Map<string, ToolCall>();
  for (const m of input.messages) for (const c of m.toolCalls ?? []) calls.set(c.id, c);
  const failed = failedCallIds(input.messages);
  const lastAssistant = [...input.messages].reverse().find((m) => m.role === 'assistant' && m.text.trim().length > 0);
  for (const m of input.messages) {
    const call = m.role === 'tool' && m.toolCallId !== undefined ? calls.get(m.toolCallId) : undefined;
    for (const f of rawFactsOf(m, m === lastAssistant, call, failed)) push(f);
  }
  return facts;
}

/** Ids of the calls whose results (among `messages`) failed or were rejected. */
function failedCallIds(messages: readonly Message[]): ReadonlySet<string> {
  const out = new Set<string>();
  for (const m of messages) if (m.role === 'tool' && m.toolCallId !== undefined && toolOutcome(m).failed) out.add(m.toolCallId);
  return out;
}

/** How a fact relates to a heading (see `Fact`). */
type Heading = Pick<Fact, 'under' | 'alone'>;

/** Adds a pointer fact; returns its position (undefined when its text was empty). */
type AddPointer = (text: string, priority: number, heading?: Heading) => number | undefined;

/**
 * What the detector that chose the messages found (the pointer lines): a later identical
 * call's output and the lines it differs by; an earlier read made stale.
 */
function pointerFacts(input: SummarizeInput, add: AddPointer): void {
  const d = input.detail ?? {};
  if (input.reason === 'redundant-tool-output') {
    const except = Array.isArray(d['except']) ? (d['except'] as unknown[]).filter((x): x is string => typeof x === 'string' && x.trim().length > 0) : [];
    const same = 'A later identical call returned the same output';
    const n = except.length;
    const head = add(n > 0 ? `${same}, except:` : `${same}.`, 100, n > 0 ? { alone: `${same}, except ${n} line${n === 1 ? '' : 's'}.` } : undefined);
    for (const e of except) add(`  ${clip(e, 160)}`, 55, head !== undefined ? { under: head } : undefined);
  }
  if (input.reason === 'stale-read' && Array.isArray(d['paths'])) {
    add(`Earlier read of ${(d['paths'] as unknown[]).join(', ')}; the file was read again or edited later.`, 100);
  }
}

/** Facts of a tool result: how it ended; error details only when it failed. */
function toolResultFacts(m: Message, add: Add, call: ToolCall | undefined): void {
  const o = toolOutcome(m);
  const edits = call ? editGists(call) : [];
  // a failed edit is told here, by path, and never as edited (`callFacts`); a command that
  // writes a file on the side (`npm test > out.log`) is named by its command, which is what failed
  const name = call && isFileEdit(call) ? `edit of ${uniq(edits.map((g) => g.path)).join(', ')}` : call ? describeCall(call) : (m.toolName ?? 'tool call');
  if (!o.failed) {
    const said = describeOutcome(o);
    // a successful edit is told by its gist; a successful command by its status and verdict
    if (said && edits.length === 0) add('ran', `${name} → ${said}`, o.verdict ? 82 : 48);
    return;
  }
  // one line says what failed and how; the assertion or exception follows when room allows
  const head = `${name} failed${o.exitCode !== undefined ? ` (exit ${o.exitCode})` : ''}`;
  const first = o.verdict ?? o.assertions[0] ?? o.error;
  add('errors', first !== undefined ? `${head}: ${first}` : head, 88);
  o.assertions.forEach((a, i) => add('errors', a, 86 - i));
  if (o.error) add('errors', o.error, 84);
  if (o.frame) add('errors', o.frame, 62);
}

/**
 * Facts of one tool call: the edits it made, else the command it ran, and the files it read.
 * An edit whose result failed or was rejected made no change: its result tells it
 * (`toolResultFacts`), never an "edited" line.
 */
function callFacts(c: ToolCall, failed: boolean, add: Add): void {
  const a = toolAction(c);
  const edits = describeEdits(c);
  if (edits.length > 0) {
    if (!failed) for (const e of edits) add('edits', clip(e, 240), 80);
  } else if (a.command) add('ran', describeCall(c), 50);
  else add('ran', `${c.name}(${clip(c.arguments.replace(/\s+/g, ' '), 100)})`, 35);
  if (a.writes.length && edits.length === 0 && !failed) add('paths', `edited ${a.writes.join(', ')}`, 65);
  if (a.reads.length) add('paths', `read ${a.reads.join(', ')}`, 45);
}

/**
 * Facts of a prompt (a user-role or system message): the user's own words under "User said";
 * a system prompt or harness-injected text, which nobody typed, as instructions; an earlier
 * compaction note (another agent's summary) as what it is — never the user's words, and
 * without what it tells its reader about itself (`compactionNoteBody`).
 */
function promptFacts(m: Message, text: string, note: boolean, add: Add): void {
  if (note) {
    add('pointer', 'Included an earlier summary of the conversation.', 60);
    for (const c of extractConstraints(text)) add('instructions', clip(c, 240), 85);
    return;
  }
  if (m.role !== 'user' && m.role !== 'system') return;
  const own = m.role === 'user' && !m.injected;
  for (const c of extractConstraints(text)) add(own ? 'user' : 'instructions', clip(c, 240), 90);
  const first = sentences(text)[0];
  if (first && !m.injected) add(own ? 'user' : 'instructions', clip(first, 200), 70);
}

/**
 * The facts of one message, in order. A fact only worth keeping when a key term names it
 * (the tail of a long dump) passes the text to match as `gate`. `failed`: ids of calls whose
 * results failed.
 */
function messageFacts(m: Message, add: Add, isLastAssistant: boolean, call: ToolCall | undefined, failed: ReadonlySet<string>): void {
  const note = m.role !== 'tool' && isAgentSummary(m);
  const text = note ? compactionNoteBody(m.text ?? '') : (m.text ?? '');
  promptFacts(m, text, note, add);
  for (const c of m.toolCalls ?? []) callFacts(c, failed.has(c.id), add);
  if (m.role === 'tool') {
    toolResultFacts(m, add, call);
    if (toolOutcome(m).failed) {
      const body = resultText(m);
      if (countFrames(body) >= 3) {
        const t = traceEssentials(body);
        if (t.projectFrame) add('errors', clip(t.projectFrame, 200), 60);
      }
    }
  } else {
    const body = `${m.reasoning ?? ''}\n${text}`;
    if (countFrames(body) >= 3) {
      const t = traceEssentials(body);
      if (t.exception) add('errors', clip(t.exception, 240), 85);
      if (t.projectFrame) add('errors', clip(t.projectFrame, 200), 60);
      if (t.last && t.last !== t.exception) add('errors', clip(t.last, 200), 62);
    } else {
      const errs = extractErrorLines(body);
      // final error lines matter most
      errs.forEach((e, i) => add('errors', clip(e, 240), i >= errs.length - 2 ? 80 : 40));
    }
  }
  const body = m.role === 'tool' ? resultText(m) : `${m.reasoning ?? ''}\n${text}`;
  // the first few of a long dump, plus any a later turn or the goal mentions
  extractConfigValues(body).forEach((v, i) => add('values', clip(v.text, 140), m.role === 'tool' ? 30 : 55, i < 60 ? undefined : v.text));
  extractPaths(body).forEach((p, i) => add('paths', p, m.role === 'tool' ? 15 : 42, i < 40 ? undefined : p));
  for (const u of extractUrls(body).slice(0, 10)) add('refs', u, 38);
  if (m.role !== 'tool') for (const id of extractIdentifiers(text).slice(0, 20)) add('refs', id, 10);
  if (m.role === 'assistant' && !note) {
    const n = isLastAssistant ? 3 : 1;
    lastSentences(text, n).forEach((s) => add('conclusion', clip(s, 240), isLastAssistant ? 75 : 20));
    if (m.reasoning && !text.trim()) lastSentences(m.reasoning, 1).forEach((s) => add('conclusion', clip(s, 200), 18));
  }
}

/** Render facts within `maxChars`, highest priority first, printed by group. */
export function renderFacts(facts: readonly Fact[], maxChars: number, header: string): string {
  // equal priority: the later fact first (the last edit, the final verdict matter most)
  const sorted = [...facts].sort((a, b) => b.priority - a.priority || b.pos - a.pos);
  const chosen: Fact[] = [];
  const seen = new Set<string>();
  let used = header.length;
  for (const f of sorted) {
    const key = f.text.toLowerCase();
    if (seen.has(key)) continue;
    // skip a fact another chosen fact already contains
    if (chosen.some((c) => c.text.toLowerCase().includes(key))) continue;
    const cost = f.text.length + 3;
    if (used + cost > maxChars) continue;
    seen.add(key);
    chosen.push(f);
    used += cost;
  }
  // group labels cost a little too: drop the least important facts until the text fits
  let text = renderChosen(chosen, header);
  while (text.length > maxChars && chosen.length > 0) {
    chosen.pop();
    text = renderChosen(chosen, header);
  }
  return text;
}

/**
 * The chosen facts as printed: a heading none of whose items was kept prints its `alone` text
 * (or nothing), and an item whose heading was not kept is not printed.
 */
function settleHeadings(chosen: readonly Fact[]): Fact[] {
  const kept = new Set(chosen.map((f) => f.pos));
  const withItems = new Set(chosen.flatMap((f) => (f.under !== undefined ? [f.under] : [])));
  const out: Fact[] = [];
  for (const f of chosen) {
    if (f.under !== undefined && !kept.has(f.under)) continue;
    if (f.alone === undefined || withItems.has(f.pos)) out.push(f);
    else if (f.alone.length > 0) out.push({ ...f, text: f.alone });
  }
  return out;
}

function renderChosen(chosen: readonly Fact[], header: string): string {
  const lines = [header];
  const printed = settleHeadings(chosen);
  for (const g of GROUPS) {
    const items = printed.filter((f) => f.group === g).sort((a, b) => a.pos - b.pos);
    if (items.length === 0) continue;
    if (g === 'pointer') lines.push(...items.map((i) => i.text));
    else if (g === 'errors' || g === 'edits' || g === 'user' || g === 'instructions' || g === 'conclusion' || g === 'values') lines.push(`${LABEL[g]}:`, ...items.map((i) => `- ${i.text}`));
    else lines.push(`${LABEL[g]}: ${items.map((i) => i.text).join('; ')}`);
  }
  return lines.join('\n');
}

/** Describe what was replaced by kind, without internal ids: "Compacted tool-call ×2, reasoning (low-score)." */
export function describeSections(input: SummarizeInput): string {
  const kinds = new Map<string, number>();
  for (const s of input.sections) kinds.set(s.kind, (kinds.get(s.kind) ?? 0) + 1);
  const parts = [...kinds].map(([k, n]) => (n > 1 ? `${k} ×${n}` : k));
  // omitted images are always noted (they are part of the header, outside the fact budget)
  const images = input.messages.reduce((n, m) => n + (m.imageCount ?? 0), 0);
  return `Compacted ${parts.join(', ')} (${input.reason}).${images > 0 ? ` ${imageNote(images, input.handle)}` : ''}`;
}

/**
 * Synchronous core of the extractive summarizer. A run of conversational messages (no tool
 * calls) becomes a span summary (span.ts): every line compressed, not a pick of facts.
 */
export function extractiveSummary(input: SummarizeInput): string {
  if (isConversational(input.messages)) return spanSummary(input);
  const maxChars = Math.max(120, Math.floor((input.maxTokens ?? DEFAULT_SUMMARY_TOKENS) * CHARS_PER_TOKEN));
  return renderFacts(collectFacts(input), maxChars, describeSections(input));
}

/** The default summarizer: deterministic, no network. */
export function createExtractiveSummarizer(): Summarizer {
  return {
    name: 'extractive',
    summarize(input: SummarizeInput): Promise<string> {
      return Promise.resolve(extractiveSummary(input));
    },
  };
}

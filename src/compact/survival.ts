/**
 * The survival check: key facts of the replaced sections must appear in the summary; the
 * missing ones are re-injected. Key facts, by rule:
 *  - paths a tool call read or edited, and paths named in user/assistant text;
 *  - constraint sentences ("must", "never", "always", "do not" …) of user/assistant text;
 *  - the final error line of every failed tool result or error text;
 *  - the active task words: goal terms that occur in the replaced text;
 *  - config values (`key=value`, `key: value`) of user/assistant text, and those of tool
 *    output whose key a later turn or the goal mentions;
 *  - archive handles of earlier summaries being re-compacted.
 */
import type { Message } from '../model/messages.js';
import { clip, extractConfigValues, extractConstraints, extractErrorLines, extractPaths, normalizeSpace, contentTerms, stripDanglingRefs, uniq } from '../text/index.js';
import { toolOutcome } from './outcome.js';
import { memoMessage } from './memo.js';
import { messageTerms } from './keyterms.js';
import { toolAction } from '../model/toolargs.js';
import { compactionNoteBody, isAgentSummary } from '../model/classify.js';

export const MAX_FACTS_PER_KIND = 12;

export interface KeyFacts {
  readonly paths: string[];
  readonly constraints: string[];
  readonly errors: string[];
  /** Verdict lines of test/build runs (passed or failed). */
  readonly verdicts: string[];
  readonly taskWords: string[];
  readonly values: string[];
  readonly handles: string[];
}

/** Key-fact pieces of one message (independent of the goal and key terms), memoized per message. */
interface MessageFacts {
  readonly paths: readonly string[];
  readonly handles: readonly string[];
  readonly constraints: readonly string[];
  /** User/assistant config values (all kept). */
  readonly values: readonly string[];
  /** Tool-output config values: kept when a key term names their key. */
  readonly toolValues: readonly { readonly key: string; readonly text: string }[];
  readonly terms: ReadonlySet<string>;
  readonly error: string | undefined;
  readonly verdict: string | undefined;
}

/**
 * `contentTerms(text)` of a message's body (or its head): the reference index's `messageTerms`
 * when that is the same text — a message of text alone, read whole — so it is not scanned twice.
 */
function termsOf(m: Message, text: string): ReadonlySet<string> {
  const textAlone = !m.reasoning && !m.toolCalls?.length && text === (m.text ?? '');
  return textAlone ? messageTerms(m) : contentTerms(text);
}

function messageFacts(m: Message): MessageFacts {
  return memoMessage(m, 'key-facts', (): MessageFacts => {
    const paths: string[] = [];
    const handles: string[] = [];
    for (const c of m.toolCalls ?? []) {
      const a = toolAction(c);
      paths.push(...a.writes, ...a.reads);
    }
    // an earlier compaction note's facts, without its note to the reader ("Do NOT answer … this summary")
    const body = m.role !== 'tool' && isAgentSummary(m) ? compactionNoteBody(m.text ?? '') : (m.text ?? '');
    for (const h of body.matchAll(/\[contextd recall (h_[0-9a-f]+)\]/g)) if (h[1]) handles.push(h[1]);
    const last = finalErrorLine(m);
    const error = last ? clip(last, 240) : undefined;
    const verdict = m.role === 'tool' ? toolOutcome(m).verdict : undefined;
    if (m.role !== 'tool') {
      paths.push(...extractPaths(body));
      return {
        paths,
        handles,
        constraints: extractConstraints(body).map((c) => clip(c, 240)),
        values: extractConfigValues(body).map((v) => clip(v.text, 140)),
        toolValues: [],
        terms: termsOf(m, body),
        error,
        verdict,
      };
    }
    const head = body.length > 50_000 ? body.slice(0, 50_000) : body;
    return {
      paths,
      handles,
      constraints: [],
      values: [],
      toolValues: extractConfigValues(head).map((v) => ({ key: v.key.toLowerCase(), text: clip(v.text, 140) })),
      terms: termsOf(m, head),
      error,
      verdict,
    };
  });
}

/** Key facts of the messages one edit replaces. */
export function keyFacts(messages: readonly Message[], goalWords: readonly string[], keyTerms: readonly string[]): KeyFacts {
  const paths: string[] = [];
  const constraints: string[] = [];
  const errors: string[] = [];
  const verdicts: string[] = [];
  const values: string[] = [];
  const handles: string[] = [];
  const key = new Set(keyTerms.map((t) => t.toLowerCase()));
  const termSets: ReadonlySet<string>[] = [];
  for (const m of messages) {
    const f = messageFacts(m);
    paths.push(...f.paths);
    handles.push(...f.handles);
    constraints.push(...f.constraints);
    values.push(...f.values);
    for (const v of f.toolValues) if (key.has(v.key)) values.push(v.text);
    termSets.push(f.terms);
    if (f.error) errors.push(f.error);
    if (f.verdict) verdicts.push(f.verdict);
  }
  const cap = (xs: string[]): string[] => uniq(xs.filter((x) => x.trim().length > 0)).slice(0, MAX_FACTS_PER_KIND);
  return {
    paths: cap(paths),
    constraints: cap(constraints),
    errors: cap(errors),
    verdicts: cap(verdicts),
    taskWords: cap(goalWords.filter((w) => termSets.some((t) => t.has(w)))),
    values: cap(values),
    handles: cap(handles),
  };
}

/**
 * The final error line of a message: for a tool result, what its failure said (the assertion,
 * else the exception or error line) and nothing when it succeeded; for other text, its last
 * error/exception line.
 */
export function finalErrorLine(m: Message): string | undefined {
  if (m.role === 'tool') {
    const o = toolOutcome(m);
    return o.failed ? (o.assertions[0] ?? o.error ?? o.verdict) : undefined;
  }
  const body = m.text.length > 100_000 ? m.text.slice(-100_000) : m.text;
  const errs = extractErrorLines(`${m.reasoning ?? ''}\n${body}`);
  const last = errs[errs.length - 1];
  return last ? stripDanglingRefs(last) || undefined : undefined;
}

/** Result of checking one summary. */
export interface SurvivalCheck {
  readonly content: string;
  readonly checked: number;
  readonly missing: string[];
}

/** Check `content` against the facts; append the missing ones. */
export function ensureSurvival(content: string, facts: KeyFacts): SurvivalCheck {
  const hay = normalizeSpace(content);
  const all: [string, string][] = [
    ...facts.constraints.map((f): [string, string] => ['constraint', f]),
    ...facts.errors.map((f): [string, string] => ['error', f]),
    ...facts.verdicts.map((f): [string, string] => ['verdict', f]),
    ...facts.paths.map((f): [string, string] => ['path', f]),
    ...facts.values.map((f): [string, string] => ['value', f]),
    ...facts.handles.map((f): [string, string] => ['handle', f]),
    ...facts.taskWords.map((f): [string, string] => ['task', f]),
  ];
  const missing = all.filter(([, f]) => !hay.includes(normalizeSpace(f)));
  if (missing.length === 0) return { content, checked: all.length, missing: [] };
  const lines = ['Kept facts:'];
  const group = (kind: string, label: string, sep: string): void => {
    const xs = missing.filter(([k]) => k === kind).map(([, f]) => f);
    if (xs.length) lines.push(`${label}: ${xs.join(sep)}`);
  };
  group('constraint', '- constraints', ' | ');
  group('error', '- errors', ' | ');
  group('verdict', '- results', ' | ');
  group('path', '- paths', ', ');
  group('value', '- values', '; ');
  group('handle', '- earlier', ', ');
  group('task', '- task', ', ');
  return { content: `${content}\n${lines.join('\n')}`, checked: all.length, missing: missing.map(([, f]) => f) };
}

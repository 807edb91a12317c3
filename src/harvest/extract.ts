/**
 * Deterministic extraction of one finished session: system-context digest, task, successful
 * tool-call examples, confirmed recoveries, context markers, user-pattern candidates,
 * knowledge items, task type and a simhash fingerprint. Pure; text is NOT yet redacted.
 */
import { createHash } from 'node:crypto';
import type { Message } from '../model/messages.js';
import type { TokenCounter } from '../model/tokens.js';
import type { KnowledgeInput, TemplateItemInput, UserPatternInput } from '../store/templates.js';
import { relativePath, searchTerms, type TaskType } from '../text/index.js';
import { classifySession, extractMarkers, repoFromCwd, repoName, type Marker } from './markers.js';
import { sha1Hex } from '../util/sha1.js';
import { isSyntheticText } from './synthetic.js';
import { extractKnowledge, userPatternCandidates, userRequests } from './patterns.js';
import { findRecoveries, type Recovery } from './recovery.js';
import { pairToolCalls, type ToolExchange } from './toolcalls.js';

export interface ExtractionLimits {
  /** Examples kept per session (default 12). */
  readonly maxExamples?: number;
  /** Characters of a result kept in an example (default 240). */
  readonly resultChars?: number;
  /** Characters of call arguments kept in an example (default 240). */
  readonly argsChars?: number;
}

export interface Extraction {
  readonly task: string;
  readonly name: string;
  readonly taskType: TaskType;
  readonly repo: string;
  readonly systemDigest: string;
  readonly fingerprint: string;
  readonly calls: readonly ToolExchange[];
  readonly recoveries: readonly Recovery[];
  readonly markers: readonly Marker[];
  readonly items: TemplateItemInput[];
  readonly knowledge: KnowledgeInput[];
  readonly patterns: UserPatternInput[];
  readonly stats: {
    readonly messages: number;
    readonly userRequests: number;
    readonly toolCalls: number;
    readonly successfulCalls: number;
    readonly failedCalls: number;
    readonly firstTimestamp?: number;
    readonly lastTimestamp?: number;
  };
}

function trimText(text: string, chars: number, lines = 6): string {
  const kept = text.split('\n').slice(0, lines).join('\n');
  const cut = kept.length > chars ? `${kept.slice(0, chars)}…` : kept;
  return cut.length < text.length && !cut.endsWith('…') ? `${cut}\n…` : cut;
}

/** Digest of the system context: size, a content hash, and its headings or first lines. */
export function systemDigest(messages: readonly Message[], counter: TokenCounter): string {
  const parts = messages
    .filter((m) => m.role === 'system' || (m.role === 'user' && m.injected === true && !m.isSummary))
    .map((m) => m.text)
    .filter((t) => t.trim().length > 0 && !isSyntheticText(t));
  if (parts.length === 0) return '';
  const all = parts.join('\n');
  const headings = all
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^#{1,3}\s+\S/.test(l) || /^<[a-z_]+>$/.test(l))
    .map((l) => l.replace(/^#+\s*/, ''))
    .filter((l, i, a) => a.indexOf(l) === i)
    .slice(0, 8);
  const gist = headings.length > 0 ? headings.join(' · ') : (all.split('\n').find((l) => l.trim().length > 0) ?? '').trim();
  const hash = sha1Hex(all).slice(0, 10);
  return `${parts.length} part(s), ${counter.count(all)} tokens, sha1 ${hash}: ${gist.slice(0, 300)}`;
}

function simhash(features: readonly (readonly [string, number])[]): string {
  const v = new Array<number>(64).fill(0);
  for (const [f, w] of features) {
    const h = createHash('sha1').update(f).digest();
    for (let bit = 0; bit < 64; bit++) {
      const byte = h[bit >> 3] ?? 0;
      v[bit] = (v[bit] ?? 0) + ((byte >> (bit & 7)) & 1 ? w : -w);
    }
  }
  let hi = 0;
  let lo = 0;
  for (let bit = 0; bit < 32; bit++) if ((v[bit] ?? 0) > 0) hi |= 1 << bit;
  for (let bit = 0; bit < 32; bit++) if ((v[bit + 32] ?? 0) > 0) lo |= 1 << bit;
  return (hi >>> 0).toString(16).padStart(8, '0') + (lo >>> 0).toString(16).padStart(8, '0');
}

/** 64-bit simhash over the task's words and bigrams and the set of tools used. */
export function sessionFingerprint(task: string, calls: readonly ToolExchange[]): string {
  const terms = searchTerms(task, 80);
  const features: [string, number][] = terms.map((t) => [`w:${t}`, 2]);
  for (let i = 0; i + 1 < terms.length; i++) features.push([`b:${terms[i]} ${terms[i + 1]}`, 1]);
  for (const tool of new Set(calls.map((c) => c.tool))) features.push([`t:${tool}`, 1]);
  return simhash(features);
}

function exampleItems(calls: readonly ToolExchange[], cwd: string | undefined, limits: Required<ExtractionLimits>): TemplateItemInput[] {
  const seen = new Set<string>();
  const items: TemplateItemInput[] = [];
  const perTool = new Map<string, number>();
  // Failed and rejected calls are never examples; one example per tool+target, ≤ 4 per tool.
  for (const c of calls) {
    if (c.isError || c.rejected || c.result === undefined) continue;
    const key = `${c.tool}\0${c.salient}`;
    if (seen.has(key) || (perTool.get(c.tool) ?? 0) >= 4) continue;
    seen.add(key);
    perTool.set(c.tool, (perTool.get(c.tool) ?? 0) + 1);
    const call = c.kind === 'shell' ? (c.command ?? c.salient) : c.argsText;
    const target = c.kind === 'read' || c.kind === 'edit' ? relativePath(c.salient, cwd) : c.salient;
    const result = c.result.trim().length === 0 ? '(no output)' : trimText(c.result.trim(), limits.resultChars, 4);
    items.push({
      kind: 'example',
      category: c.tool,
      text: `${c.tool}${target ? ` ${target}` : ''}`,
      data: { call: trimText(call, limits.argsChars, 8), result },
    });
    if (items.length >= limits.maxExamples) break;
  }
  return items;
}

/** Extract everything harvest keeps from one session's messages. */
export function extractSession(
  messages: readonly Message[],
  meta: { repo?: string | undefined; cwd?: string | undefined },
  counter: TokenCounter,
  limits: ExtractionLimits = {},
): Extraction {
  const lim: Required<ExtractionLimits> = { maxExamples: limits.maxExamples ?? 12, resultChars: limits.resultChars ?? 240, argsChars: limits.argsChars ?? 240 };
  const calls = pairToolCalls(messages);
  const requests = userRequests(messages);
  const task = (requests[0] ?? '').replace(/\s+/g, ' ').trim().slice(0, 600);
  const recoveries = findRecoveries(calls);
  const markers = extractMarkers(messages, calls, meta);
  const repoMarker = markers.find((m) => m.kind === 'repo')?.value;
  // The repo: the transcript's git remote, else one named in the session, else named by the cwd.
  const repo = meta.repo ? repoName(meta.repo) : (repoMarker ?? repoFromCwd(meta.cwd ?? ''));
  const items: TemplateItemInput[] = [
    ...exampleItems(calls, meta.cwd, lim),
    ...recoveries.map((r) => ({
      kind: 'recovery' as const,
      category: r.tool,
      text: `${r.tool} ${r.target}: "${r.signature}" → ${r.fix}`,
      data: { tool: r.tool, target: r.target, signature: r.signature, fix: r.fix },
    })),
    ...markers.map((m) => ({ kind: 'marker' as const, category: m.kind, text: m.value, data: { count: m.count } })),
  ];
  const timestamps = messages.map((m) => m.timestamp).filter((t): t is number => t !== undefined);
  const firstWords = task.split(/\s+/).slice(0, 8).join(' ').replace(/[^\p{L}\p{N}\s/._-]/gu, '').trim();
  return {
    task,
    name: firstWords.length > 0 ? firstWords.slice(0, 80) : `session with ${calls.length} tool calls`,
    taskType: classifySession(calls, task),
    repo,
    systemDigest: systemDigest(messages, counter),
    fingerprint: sessionFingerprint(task, calls),
    calls,
    recoveries,
    markers,
    items,
    knowledge: extractKnowledge({ calls, recoveries, requests, cwd: meta.cwd }),
    patterns: userPatternCandidates(requests),
    stats: {
      messages: messages.length,
      userRequests: requests.length,
      toolCalls: calls.length,
      successfulCalls: calls.filter((c) => !c.isError && !c.rejected).length,
      failedCalls: calls.filter((c) => c.isError).length,
      ...(timestamps.length > 0 ? { firstTimestamp: Math.min(...timestamps), lastTimestamp: Math.max(...timestamps) } : {}),
    },
  };
}

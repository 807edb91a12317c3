/**
 * Redaction of secrets and personal data before anything is stored or logged.
 *
 * Two layers, both replacing a finding with `[REDACTED:<rule>]`:
 *  1. our rules (`redact-rules.ts`: gitleaks-style vendor keys, URL passwords, JWTs, bearer
 *     tokens, `password=` assignments, e-mail addresses, high-entropy tokens) — synchronous;
 *  2. secretlint's recommended preset (`@secretlint/core` `lintSource`) — asynchronous, so
 *     `redactAll` runs it ONCE over a batch of texts joined together, and maps the ranges back.
 */
import type { lintSource } from '@secretlint/core';
import { SECRET_RULES } from './redact-rules.js';
import type { Message } from '../model/messages.js';

export interface RedactionFinding {
  readonly rule: string;
  readonly count: number;
}

export interface Redacted {
  readonly text: string;
  readonly findings: RedactionFinding[];
}

/** The marker a finding is replaced with. */
export function redactionMarker(rule: string): string {
  return `[REDACTED:${rule}]`;
}

function addFinding(counts: Map<string, number>, rule: string, n = 1): void {
  counts.set(rule, (counts.get(rule) ?? 0) + n);
}

function toFindings(counts: Map<string, number>): RedactionFinding[] {
  return [...counts.entries()].sort((a, b) => a[0].localeCompare(b[0])).map(([rule, count]) => ({ rule, count }));
}

/** Two tallies of findings as one, by rule. */
export function mergeFindings(a: readonly RedactionFinding[], b: readonly RedactionFinding[]): RedactionFinding[] {
  const counts = new Map<string, number>();
  for (const f of [...a, ...b]) counts.set(f.rule, (counts.get(f.rule) ?? 0) + f.count);
  return toFindings(counts);
}

interface Secretlint {
  readonly lintSource: typeof lintSource;
  readonly config: Parameters<typeof lintSource>[0]['options']['config'];
}

let secretlint: Promise<Secretlint> | undefined;

/**
 * secretlint, loaded on first use by a dynamic import(): its packages are ES modules only, and
 * the hook bundle is CommonJS, where require() of an ES module works only from Node 20.19 and
 * 22.12 — import() works on every Node this supports (rolldown keeps an external's import() as
 * it is in CommonJS output: dynamicImportInCjs).
 */
function loadSecretlint(): Promise<Secretlint> {
  secretlint ??= Promise.all([import('@secretlint/core'), import('@secretlint/secretlint-rule-preset-recommend'), import('@secretlint/profiler')]).then(([core, preset, profiler]) => {
    // secretlint marks every lint with `performance.mark` and its profiler keeps each entry for
    // good (searching the list on every mark and queueing a measure per pair): in a daemon that
    // redacts every archived original this grew without bound — half the CPU and hundreds of MiB
    // under load (issue 14 profile). contextd never reads the profile, so marking is switched off.
    profiler.secretLintProfiler.mark = () => undefined;
    return { lintSource: core.lintSource, config: { rules: [{ id: '@secretlint/secretlint-rule-preset-recommend', rule: preset.creator }] } };
  }).catch((err: unknown) => {
    // Not cached: a transient failure (EMFILE) must not stop every later redaction until a restart.
    secretlint = undefined;
    throw err;
  });
  return secretlint;
}

/** Apply our own rules only (synchronous; used for log fields and as the first layer). */
export function redactSync(text: string): Redacted {
  const counts = new Map<string, number>();
  const out = applyRules(text, counts);
  return { text: out, findings: toFindings(counts) };
}

function applyRules(text: string, counts: Map<string, number>): string {
  let out = text;
  for (const rule of SECRET_RULES) {
    rule.pattern.lastIndex = 0;
    if (!rule.pattern.test(out)) continue;
    rule.pattern.lastIndex = 0;
    const marker = redactionMarker(rule.id);
    out = out.replace(rule.pattern, (match: string, ...rest: unknown[]) => {
      const groups = rest.slice(0, countGroups(rest)) as string[];
      if (rule.accept && !rule.accept(match, ...groups)) return match;
      addFinding(counts, rule.id);
      return rule.replace ? rule.replace(marker, match, ...groups) : marker;
    });
  }
  return out;
}

/** `String.replace` passes groups, then offset (number), then the whole string: keep the groups. */
function countGroups(rest: unknown[]): number {
  const i = rest.findIndex((v) => typeof v === 'number');
  return i < 0 ? rest.length : i;
}

const SEPARATOR = '\n\n\u2063\n\n';

function ruleName(ruleId: string): string {
  return ruleId.replace(/^@secretlint\/secretlint-rule-/, '').replace(/^@secretlint\//, '') || 'secretlint';
}

/**
 * Redact many texts: our rules on each, then one secretlint pass over all of them.
 * Findings are summed over the batch.
 */
export async function redactAll(texts: readonly string[]): Promise<{ texts: string[]; findings: RedactionFinding[] }> {
  const counts = new Map<string, number>();
  // The separator contains U+2063, which inputs practically never hold; fold it away if they do.
  const first = texts.map((t) => applyRules(t.includes(SEPARATOR) ? t.split(SEPARATOR).join('\n\n') : t, counts));
  if (first.length === 0) return { texts: [], findings: [] };
  const joined = first.join(SEPARATOR);
  const lint = await loadSecretlint();
  const result = await lint.lintSource({
    source: { filePath: '/contextd/harvest.txt', content: joined, contentType: 'text', ext: '.txt' },
    options: { config: lint.config, noPhysicFilePath: true, maskSecrets: true },
  });
  const ranges = result.messages
    .filter((m) => Array.isArray(m.range) && m.range[1] > m.range[0])
    .map((m) => ({ start: m.range[0], end: m.range[1], rule: ruleName(m.ruleId) }))
    .sort((a, b) => a.start - b.start || b.end - a.end);
  if (ranges.length === 0) return { texts: first, findings: toFindings(counts) };
  // Rebuild the joined text with the ranges replaced, then split it again.
  let rebuilt = '';
  let at = 0;
  for (const r of ranges) {
    if (r.start < at) continue; // overlapping finding already covered
    const piece = joined.slice(r.start, r.end);
    // Never swallow a separator: redact each side of it separately.
    const sides = piece.split(SEPARATOR);
    rebuilt += joined.slice(at, r.start) + sides.map((s) => (s.length > 0 ? redactionMarker(r.rule) : s)).join(SEPARATOR);
    addFinding(counts, r.rule, sides.filter((s) => s.length > 0).length);
    at = r.end;
  }
  rebuilt += joined.slice(at);
  return { texts: rebuilt.split(SEPARATOR), findings: toFindings(counts) };
}

/** Redact one text with both layers. */
export async function redact(text: string): Promise<Redacted> {
  const r = await redactAll([text]);
  return { text: r.texts[0] ?? '', findings: r.findings };
}


/**
 * A tool name as the rules read it: its `__` joins (`mcp__<server>__<tool>`, the server being
 * any name a user configured) opened with NULs, so a key between them stands at word
 * boundaries as its rule expects (`\bghp_…\b` never matches inside `mcp__ghp_…__query`).
 */
function openName(name: string): string {
  return name.replace(/\0/g, '').replace(/__/g, '\0__\0');
}

function closeName(text: string): string {
  return text.replace(/\0/g, '');
}

/** Every tool name of `messages`, in order: each call's name, then the message's own `toolName`. */
function toolNames(messages: readonly Message[]): string[] {
  const names: string[] = [];
  for (const m of messages) {
    for (const c of m.toolCalls ?? []) names.push(c.name);
    if (m.toolName !== undefined) names.push(m.toolName);
  }
  return names;
}

/** `messages` with their tool names replaced by `next()`, in the order `toolNames` lists them. */
function withToolNames(messages: readonly Message[], next: () => string): Message[] {
  return messages.map((m): Message => {
    if (m.toolCalls === undefined && m.toolName === undefined) return m;
    const toolCalls = m.toolCalls?.map((c) => ({ ...c, name: next() }));
    const toolName = m.toolName !== undefined ? next() : undefined;
    return { ...m, ...(toolCalls ? { toolCalls } : {}), ...(toolName !== undefined ? { toolName } : {}) };
  });
}

/**
 * Redact the tool names of messages (a call's `name`, a result's `toolName`) with both layers:
 * MCP tool names carry user-chosen server names, a key pasted there included. A name with
 * nothing found comes back as it was (`Read`, `exec_command`, `mcp__github__create_issue`),
 * and equal names are redacted alike, so calls and results still pair up by name.
 */
export async function redactToolNames(messages: readonly Message[]): Promise<{ messages: Message[]; findings: RedactionFinding[] }> {
  const names = toolNames(messages);
  if (names.length === 0) return { messages: [...messages], findings: [] };
  const { texts, findings } = await redactAll(names.map(openName));
  let i = 0;
  return { messages: withToolNames(messages, () => closeName(texts[i++] ?? '')), findings };
}

/**
 * Redact the free text of messages (text, reasoning, tool-call arguments) and their tool names
 * with both layers, in one batch; ids, roles and offsets are kept so the messages still pair
 * up. Used for the archive of compacted originals, by the same rules as the template store.
 */
export async function redactMessages(messages: readonly Message[]): Promise<{ messages: Message[]; findings: RedactionFinding[] }> {
  const texts: string[] = [];
  for (const m of messages) {
    texts.push(m.text, m.reasoning ?? '');
    for (const c of m.toolCalls ?? []) texts.push(c.arguments);
  }
  const names = toolNames(messages);
  const { texts: out, findings } = await redactAll([...texts, ...names.map(openName)]);
  let i = 0;
  const next = (): string => out[i++] ?? '';
  const redacted = messages.map((m): Message => {
    const text = next();
    const reasoning = next();
    const toolCalls = m.toolCalls?.map((c) => ({ ...c, arguments: next() }));
    return { ...m, text, ...(m.reasoning !== undefined ? { reasoning } : {}), ...(toolCalls ? { toolCalls } : {}) };
  });
  return { messages: withToolNames(redacted, () => closeName(next())), findings };
}

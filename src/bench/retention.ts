/**
 * Retention bench: how much of what matters survives compaction, per strategy and budget.
 *
 * Sessions: every corpus transcript `readTranscriptFile` can read, plus generated sessions
 * with planted probes. Every strategy compacts every session to 30%, 50% and 70% of its
 * tokens (reserveRatio 0, budgetTokens = share × tokens). A probe is kept when its text,
 * normalized (lowercase, quotes/backticks dropped, whitespace collapsed, no spaces around
 * `=` or `:`), is a substring of the normalized compacted context (contents, reasoning and
 * tool-call arguments of all output messages).
 *
 * Corpus probe rules (independent of the section model):
 *  - instruction: each real user message (role user, not injected, not a summary, ≥ 15
 *    chars, not an acknowledgement): its first 160 chars;
 *  - goal: the last such message: its first 160 chars;
 *  - decision: assistant sentences stating a root cause / fix / decision (DECISION_RE), ≤ 200 chars;
 *  - error: the last error line of each failed tool result (isError) — its last non-empty
 *    line when it has no error-shaped line — ≤ 240 chars;
 *  - path: each path a tool call wrote (Edit/Write/apply_patch/sed -i/redirect …);
 *  - fact: a config value (`key=value`, `key: value`) seen in exactly one tool output, whose
 *    key is specific (snake_case, dotted, camelCase or CONSTANT), no earlier user/assistant
 *    text names it and a later user/assistant text does.
 * Generated sessions plant the same categories (see `generateSession`).
 *
 * Budgets are shares of the transcript's own (counted) tokens: usage reports are left out, so
 * the agent's overhead outside the transcript (system prompt, tools) does not enter the
 * measure. On real sessions the state probes of `state-probes.ts` are also scored per
 * strategy and budget, with the count of summaries naming internal ids and of quoted recall
 * handles that do not resolve in a real (temporary) SQLite archive.
 */
import { seededRandom } from '../util/random.js';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchLocomo, locomoFile } from './locomo.js';
import type { Message, TranscriptEvent } from '../model/messages.js';
import { readTranscriptFile } from '../ingest/decoder.js';
import { SessionModel } from '../model/index.js';
import { createTokenCounter, type TokenCounter } from '../model/tokens.js';
import { archiveEntries, compactWithStrategy, planCompaction, SummaryCache, STRATEGIES, type OpenAIChatMessage, type StrategyName } from '../compact/index.js';
import { extractConfigValues, extractErrorLines, sentences } from '../text/index.js';
import { toolAction } from '../model/toolargs.js';
import { Archive, openDb } from '../store/index.js';
import { quotedHandles, STATE_PROBES, stateProbeKept, stateProbes, summariesNamingIds } from './state-probes.js';
import { cellKey, cellRows, countProbe, countRun, emptyCell, ratio, type Cell } from './tally.js';

export const PROBE_CATEGORIES = ['instruction', 'goal', 'decision', 'error', 'path', 'fact'] as const;
export type ProbeCategory = (typeof PROBE_CATEGORIES)[number];
export interface Probe {
  readonly category: ProbeCategory;
  readonly text: string;
}
export const BUDGET_SHARES = [0.3, 0.5, 0.7] as const;

/** Normalization used to decide whether a probe survived. */
export function normalizeProbe(text: string): string {
  return text
    .toLowerCase()
    .replace(/[`"']/g, '')
    .replace(/\s+/g, ' ')
    .replace(/\s*([=:])\s*/g, '$1')
    .trim();
}

/** The searchable text of a compacted context. */
export function contextText(messages: readonly OpenAIChatMessage[]): string {
  const parts: string[] = [];
  for (const m of messages) {
    parts.push(m.content);
    if (m.reasoning) parts.push(m.reasoning);
    for (const c of m.tool_calls ?? []) parts.push(c.function.arguments);
  }
  return normalizeProbe(parts.join('\n'));
}

const ACK = /^(ok(ay)?|k|thanks?( you)?|thx|continue|go on|go ahead|proceed|yes|yep|yeah|no|sure|great|cool|nice|perfect|good|done|lgtm|next)( please)?[.!\s]*$/i;
export const DECISION_RE = /\b(?:root cause|the (?:fix|problem|issue|bug|cause) (?:is|was)|i(?:'ve| have)? decided|we(?:'ll| will) (?:use|go with|switch)|i(?:'ll| will) (?:use|go with|switch to))\b/i;

/** Probes of a real transcript, by the rules in the header. */
export function corpusProbes(messages: readonly Message[]): Probe[] {
  const probes: Probe[] = [];
  const real = messages.filter((m) => m.role === 'user' && !m.injected && !m.isSummary && m.text.trim().length >= 15 && !ACK.test(m.text.trim()));
  for (const m of real) probes.push({ category: 'instruction', text: m.text.trim().slice(0, 160) });
  const last = real[real.length - 1];
  if (last) probes.push({ category: 'goal', text: last.text.trim().slice(0, 160) });
  const keyFirstSaid = new Map<string, number>();
  const keyLastSaid = new Map<string, number>();
  messages.forEach((m, i) => {
    if (m.role === 'assistant' && m.text) {
      for (const s of sentences(m.text)) if (DECISION_RE.test(s) && s.length <= 200 && s.length >= 20) probes.push({ category: 'decision', text: s });
    }
    if (m.role === 'tool' && m.isError) {
      const errs = extractErrorLines(m.text);
      const e = errs[errs.length - 1] ?? m.text.trim().split('\n').filter((l) => l.trim()).pop()?.trim();
      if (e && e.length <= 240 && e.length >= 8) probes.push({ category: 'error', text: e });
    }
    for (const c of m.toolCalls ?? []) for (const w of toolAction(c).writes) probes.push({ category: 'path', text: w });
    if (m.role === 'user' || m.role === 'assistant') {
      for (const w of m.text.toLowerCase().match(/[a-z_][\w.-]{2,60}/g) ?? []) {
        if (!keyFirstSaid.has(w)) keyFirstSaid.set(w, i);
        keyLastSaid.set(w, i);
      }
    }
  });
  const seen = new Map<string, { text: string; at: number; n: number }>();
  messages.forEach((m, i) => {
    if (m.role !== 'tool') return;
    for (const v of extractConfigValues(m.text.slice(0, 50_000))) {
      const prev = seen.get(v.text);
      seen.set(v.text, { text: v.text, at: prev?.at ?? i, n: (prev?.n ?? 0) + 1 });
    }
  });
  for (const [text, s] of seen) {
    if (s.n !== 1) continue;
    const rawKey = /^([A-Za-z_][\w.-]*)/.exec(text)?.[1] ?? '';
    // named by a specific key (snake_case, dotted, camelCase or CONSTANT), not a common word
    if (rawKey.length < 4 || !/[_.]|[a-z][A-Z]|^[A-Z0-9_]+$/.test(rawKey)) continue;
    const key = rawKey.toLowerCase();
    const first = keyFirstSaid.get(key);
    const lastSaid = keyLastSaid.get(key);
    if (lastSaid !== undefined && lastSaid > s.at && (first === undefined || first > s.at)) probes.push({ category: 'fact', text });
  }
  const uniq = new Map<string, Probe>();
  for (const p of probes) uniq.set(`${p.category}\u0000${normalizeProbe(p.text)}`, p);
  return [...uniq.values()];
}

// ------------------------------------------------------------ generated sessions

const FILES = ['src/server/pool.ts', 'src/server/router.ts', 'src/db/client.ts', 'src/util/retry.ts', 'lib/cache/lru.py', 'src/api/handlers.ts', 'src/jobs/scheduler.ts', 'tests/pool.test.ts'];
const KEYS = ['pool_max_idle_ms', 'retry_backoff_base', 'cache_shard_count', 'scheduler_tick_ms', 'router_max_body_kb', 'db_statement_timeout'];
const WORDS = 'acquire release queue drain socket handshake latency buffer shard index lease token quota window backoff jitter ledger cursor batch flush'.split(' ');

export interface GeneratedSession {
  readonly sessionId: string;
  readonly events: TranscriptEvent[];
  readonly probes: Probe[];
}

/**
 * A synthetic coding session (openai-chat shaped messages) of about `turns` agent turns with
 * planted probes: constraint instructions, a goal, decisions, failing test runs (stack traces
 * with one project frame), edited paths, and a config value read once early in a long config
 * dump that the last user turn refers to by key.
 */
export function generateSession(seed: number, turns = 40): GeneratedSession {
  const r = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const word = (): string => pick(WORDS);
  const events: TranscriptEvent[] = [];
  const probes: Probe[] = [];
  let n = 0;
  let call = 0;
  const push = (m: Omit<Message, 'id'>): void => {
    events.push({ type: 'message', message: { id: `g${seed}-${n++}`, ...m } });
  };
  const tool = (name: string, args: Record<string, unknown>, output: string, isError = false): void => {
    const id = `call_${seed}_${call++}`;
    push({ role: 'assistant', text: '', toolCalls: [{ id, name, arguments: JSON.stringify(args) }] });
    push({ role: 'tool', text: output, toolCallId: id, toolName: name, ...(isError ? { isError: true } : {}) });
  };
  const fileBody = (path: string, version: number): string => {
    const lines: string[] = [`// ${path} (rev ${version})`];
    for (let i = 0; i < 60; i++) lines.push(`export function ${word()}${i}${pick(['Handler', 'Step', 'Guard'])}(input: ${pick(['Buffer', 'string', 'Request'])}): number { return ${Math.floor(r() * 1000)} + input.length; }`);
    return lines.join('\n');
  };
  const key = pick(KEYS);
  const value = 1000 + Math.floor(r() * 90_000);
  const factLine = `${key}: ${value}`;
  const fn = `${word()}Connection`;
  const limit = 2 + Math.floor(r() * 7);

  push({ role: 'system', text: 'You are a careful coding agent working in a TypeScript monorepo. Use the tools to read, edit and test code.' });
  const instr1 = `Fix the intermittent failure in tests/pool.test.ts. You must never change the exported signature of ${fn}. Always keep the retry limit at ${limit}.`;
  push({ role: 'user', text: instr1 });
  probes.push({ category: 'instruction', text: instr1 });
  // the config dump: one planted fact among many values
  const cfg: string[] = ['# config/app.yaml'];
  for (let i = 0; i < 80; i++) cfg.push(`${word()}_${word()}_${i}: ${Math.floor(r() * 5000)}`);
  cfg.splice(10 + Math.floor(r() * 60), 0, factLine);
  tool('read_file', { path: 'config/app.yaml' }, cfg.join('\n'));
  probes.push({ category: 'fact', text: factLine });

  let decisions = 0;
  for (let t = 0; t < turns; t++) {
    const file = pick(FILES);
    push({ role: 'assistant', text: `Let me look at ${file} to see how ${word()} and ${word()} interact.`, reasoning: `The ${word()} path might ${pick(['race', 'leak', 'stall'])} when the ${word()} is ${pick(['full', 'empty', 'closed'])}. I should check ${file}.` });
    tool('read_file', { path: file }, fileBody(file, t));
    if (t % 4 === 1) {
      const failing = r() < 0.6;
      const errLine = `AssertionError: expected ${word()} count ${Math.floor(r() * 9)} to equal ${Math.floor(r() * 9)} (case ${seed}-${t})`;
      const frames = [
        '    at assert (node_modules/vitest/dist/chunk-expect.js:1201:11)',
        '    at Proxy.<anonymous> (node_modules/vitest/dist/chunk-expect.js:980:18)',
        `    at ${fn} (${file}:${10 + t}:7)`,
        '    at runTest (node_modules/@vitest/runner/dist/index.js:781:11)',
        '    at runSuite (node_modules/@vitest/runner/dist/index.js:909:15)',
        '    at runFiles (node_modules/@vitest/runner/dist/index.js:958:5)',
        '    at processTicksAndRejections (node:internal/process/task_queues:95:5)',
      ];
      const passes: string[] = [];
      for (let i = 0; i < 25; i++) passes.push(` ✓ tests/${word()}.test.ts > ${word()} ${word()} (${Math.floor(r() * 40)} ms)`);
      const out = failing ? [...passes, ` FAIL tests/pool.test.ts > ${word()} under load`, errLine, ...frames, ' Tests  1 failed | 25 passed'].join('\n') : [...passes, ' Tests  26 passed'].join('\n');
      tool('terminal', { command: 'npx vitest run tests/pool.test.ts' }, out, failing);
      if (failing) probes.push({ category: 'error', text: errLine });
    }
    if (t % 5 === 2) {
      push({ role: 'assistant', text: `Let me try wrapping the ${word()} in a ${word()} guard.` });
      tool('terminal', { command: `grep -rn "${word()}" src/` }, Array.from({ length: 30 }, (_, i) => `src/${word()}/${word()}.ts:${i + 1}:  const ${word()} = ${word()}(${i});`).join('\n'));
      push({ role: 'assistant', text: `That didn't work: the ${word()} still ${pick(['races', 'leaks', 'stalls'])}. Instead I'll look at the ${word()} queue.` });
    }
    if (t % 6 === 3) {
      const path = pick(FILES.filter((f) => f !== 'tests/pool.test.ts'));
      tool('edit_file', { path, old_str: `${word()}(`, new_str: `${word()}Safe(` }, `Edited ${path}: 1 replacement.`);
      probes.push({ category: 'path', text: path });
    }
    if (t % 9 === 4) {
      const d = `The root cause is the ${word()} ${pick(['timer', 'lock', 'counter'])} racing the ${word()} queue (${seed}.${decisions++}).`;
      push({ role: 'assistant', text: `${d} I'll fix it by serializing the ${word()} step.` });
      probes.push({ category: 'decision', text: d });
    }
    if (t % 7 === 6) {
      const ins = r() < 0.5 ? 'ok continue' : `Please also make sure the ${word()} metrics in src/api/handlers.ts are never reset on reload.`;
      push({ role: 'user', text: ins });
      if (ins !== 'ok continue') probes.push({ category: 'instruction', text: ins });
    }
  }
  const goal = `Now set the idle timeout in src/server/pool.ts to the ${key} value from config/app.yaml and rerun the tests.`;
  push({ role: 'user', text: goal });
  probes.push({ category: 'instruction', text: goal }, { category: 'goal', text: goal });
  push({ role: 'assistant', text: `I'll update src/server/pool.ts with the ${key} value.` });
  return { sessionId: `gen-${seed}`, events, probes };
}

// ------------------------------------------------------------ the bench

/** State-probe results of one strategy × budget over the real sessions. */
interface StateCell {
  kept: Record<string, number>;
  total: Record<string, number>;
  summariesNamingIds: number;
  handles: number;
  unresolvedHandles: number;
}

export interface RetentionOptions {
  readonly corpusDir: string;
  /** Generated sessions (default 6). */
  readonly generated?: number;
  /** Turns per generated session (default 40). */
  readonly turns?: number;
  /** Run the 200k-token plan timing (default true). */
  readonly timing?: boolean;
  readonly strategies?: readonly StrategyName[];
  /** LoCoMo data (see locomo.ts): a directory holding locomo-dev.json; default `$CONTEXTD_LOCOMO`. */
  readonly locomoDir?: string;
}

/** The LoCoMo part: measured when the data is there, else a line saying how to run it. */
async function locomoPart(opts: RetentionOptions, counter: TokenCounter): Promise<Record<string, unknown>> {
  const file = locomoFile(opts.locomoDir);
  if (!file) return { skipped: 'LoCoMo not found: set CONTEXTD_LOCOMO or pass --locomo DIR (a directory with locomo-dev.json)' };
  const archiveDir = mkdtempSync(join(tmpdir(), 'contextd-bench-locomo-'));
  try {
    return await benchLocomo({ file, counter, archiveDir, ...(opts.strategies ? { strategies: opts.strategies } : {}) });
  } finally {
    rmSync(archiveDir, { recursive: true, force: true });
  }
}

/** Run the retention bench; returns one JSON-able report. */
export async function benchRetention(opts: RetentionOptions): Promise<Record<string, unknown>> {
  const started = Date.now();
  const counter = createTokenCounter();
  const strategies = opts.strategies ?? STRATEGIES;
  const sessions: { name: string; events: TranscriptEvent[]; probes?: Probe[] }[] = [];
  const skipped: { file: string; why: string }[] = [];
  for (const f of readdirSync(opts.corpusDir).sort()) {
    if (f.endsWith('.md')) continue;
    try {
      const r = await readTranscriptFile(join(opts.corpusDir, f));
      sessions.push({ name: f, events: r.events });
    } catch (err) {
      skipped.push({ file: f, why: err instanceof Error ? err.message : String(err) });
    }
  }
  for (let i = 0; i < (opts.generated ?? 6); i++) {
    const g = generateSession(1000 + i, opts.turns ?? 40);
    sessions.push({ name: g.sessionId, events: g.events, probes: g.probes });
  }
  const cells = new Map<string, Cell>();
  const stateCells = new Map<string, StateCell>();
  const perSession: Record<string, unknown>[] = [];
  const archiveDir = mkdtempSync(join(tmpdir(), 'contextd-bench-archive-'));
  const db = openDb(join(archiveDir, 'contextd.db'));
  const archive = new Archive(db);
  try {
    for (const s of sessions) {
      const model = new SessionModel({ sessionId: s.name, tokenCounter: counter });
      model.applyAll(s.events.filter((e) => e.type !== 'usage'));
      const probes = s.probes ?? corpusProbes(model.messages());
      const state = s.probes ? [] : stateProbes(model.messages());
      const tokens = model.tokens();
      if (tokens < 500 || probes.length === 0) {
        skipped.push({ file: s.name, why: `too small (${tokens} tokens, ${probes.length} probes)` });
        continue;
      }
      const row: Record<string, unknown> = { session: s.name, tokens, probes: probes.length };
      for (const share of BUDGET_SHARES) {
        for (const strategy of strategies) {
          const res = await compactWithStrategy(model, { strategy, budgetTokens: Math.ceil(tokens * share), reserveRatio: 0, tokenCounter: counter });
          const hay = contextText(res.messages);
          const key = cellKey(strategy, share);
          const cell = cells.get(key) ?? emptyCell();
          let kept = 0;
          for (const p of probes) {
            const k = hay.includes(normalizeProbe(p.text));
            countProbe(cell, p.category, k);
            if (k) kept++;
          }
          countRun(cell, res);
          cells.set(key, cell);
          row[key] = ratio(kept, probes.length);
          if (s.probes) continue;
          // real sessions: state probes, internal ids, and handles checked against a real archive
          const sc = stateCells.get(key) ?? { kept: {}, total: {}, summariesNamingIds: 0, handles: 0, unresolvedHandles: 0 };
          const lost: string[] = [];
          for (const p of state) {
            sc.total[p.kind] = (sc.total[p.kind] ?? 0) + 1;
            if (stateProbeKept(p, hay, normalizeProbe)) sc.kept[p.kind] = (sc.kept[p.kind] ?? 0) + 1;
            else lost.push(p.kind);
          }
          archive.putMany(archiveEntries(model, res.edits, { sessionId: model.sessionId, createdAt: Date.now() }));
          const handles = quotedHandles(res.messages);
          sc.handles += handles.length;
          sc.unresolvedHandles += handles.filter((h) => archive.get(h) === undefined).length;
          sc.summariesNamingIds += summariesNamingIds(res.messages);
          stateCells.set(key, sc);
          if (lost.length > 0) row[`stateLost:${key}`] = lost.join(',');
        }
      }
      perSession.push(row);
    }
  } finally {
    db.close();
    rmSync(archiveDir, { recursive: true, force: true });
  }
  const stateTable: Record<string, unknown>[] = [];
  for (const share of BUDGET_SHARES) {
    for (const strategy of strategies) {
      const c = stateCells.get(cellKey(strategy, share));
      if (!c) continue;
      const byKind: Record<string, string> = {};
      for (const k of STATE_PROBES) byKind[k] = `${c.kept[k] ?? 0}/${c.total[k] ?? 0}`;
      stateTable.push({ strategy, budget: share, ...byKind, summariesNamingIds: c.summariesNamingIds, handles: c.handles, unresolvedHandles: c.unresolvedHandles });
    }
  }
  const table = cellRows(cells, BUDGET_SHARES, strategies, PROBE_CATEGORIES, { missing: emptyCell }).map(({ strategy, budget, kept, byCategory, cell: c }) => ({
    strategy,
    budget,
    all: kept,
    ...byCategory,
    tokensSaved: c.tokensBefore ? Math.round((1 - c.tokensAfter / c.tokensBefore) * 1000) / 1000 : 0,
    overBudget: c.overBudget,
    sessions: c.runs,
  }));
  const locomo = await locomoPart(opts, counter);
  const timing = opts.timing === false ? undefined : await planTiming(counter);
  return { bench: 'retention', sessions: perSession.length, skipped, table, stateProbes: stateTable, perSession, locomo, timing, elapsedMs: Date.now() - started };
}

/** Plan time for a ~200k-token generated session, and a re-plan after one appended line. */
async function planTiming(counter: ReturnType<typeof createTokenCounter>): Promise<Record<string, number>> {
  const g = generateSession(4242, 137);
  const model = new SessionModel({ sessionId: g.sessionId, tokenCounter: counter, budgetTokens: 200_000 });
  model.applyAll(g.events);
  const cache = new SummaryCache();
  let t0 = performance.now();
  const plan = await planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache });
  const planMs = performance.now() - t0;
  model.apply({ type: 'message', message: { id: 'appended-1', role: 'assistant', text: 'Running the pool tests again with the new timeout.' } });
  t0 = performance.now();
  const again = await planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache });
  const replanMs = performance.now() - t0;
  return {
    sessionTokens: plan.tokensBefore,
    planMs: Math.round(planMs),
    edits: plan.edits.length,
    tokensAfter: plan.tokensAfter,
    replanAfterAppendMs: Math.round(replanMs),
    replanEdits: again.edits.length,
  };
}

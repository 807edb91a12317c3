/**
 * Warm-template bench: harvest throughput, bootstrap latency, and a leave-one-out replay on
 * the real corpus measuring how much of a session's own opening the bootstrap anticipated,
 * against a seeded random-template baseline.
 */
import { seededRandom } from '../util/random.js';
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { harvestFiles, harvestSession, loadTranscript, pairToolCalls, userRequests, type LoadedSession } from '../harvest/index.js';
import { createTokenCounter, type TokenCounter } from '../model/tokens.js';
import { openDb, type Db } from '../store/db.js';
import { TemplateStore, type Template } from '../store/templates.js';
import { silentLogger } from '../util/logger.js';
import { bootstrap, renderBootstrap } from '../warm/index.js';
import { percentile, round } from './harness.js';

export interface BenchWarmOptions {
  readonly corpusDir: string;
  readonly tmpDir: string;
  /** Generated transcripts for the throughput run (default 2000). */
  readonly generatedFiles?: number;
  /** Bootstrap calls timed for the latency figures (default 500). */
  readonly bootstrapSamples?: number;
  readonly seed?: number;
}

/** A seeded PRNG (re-exported for the tests that used it from here). */
export const rng = seededRandom;

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)] as T;
}


const REPOS = ['acme/api', 'acme/web', 'acme/cli', 'data/etl', 'data/warehouse', 'ml/trainer', 'infra/terraform', 'docs/site'];
const COMPONENTS = ['parser', 'router', 'auth middleware', 'cache layer', 'billing job', 'csv importer', 'search index', 'rate limiter', 'config loader', 'websocket server'];
const VERBS = ['fix the failing test in', 'add retries to', 'refactor', 'speed up', 'add logging to', 'document', 'remove the deprecated flag from', 'port to async'];
const LANGS = [
  { ext: 'ts', test: 'npm test', build: 'npm run build', err: "TypeError: Cannot read properties of undefined (reading 'id')" },
  { ext: 'py', test: 'pytest', build: 'python -m mypy', err: 'AssertionError: expected 200 but got 500 in handler' },
  { ext: 'go', test: 'go test', build: 'go build', err: 'undefined: parseConfig referenced in main package' },
  { ext: 'rs', test: 'cargo test', build: 'cargo build', err: 'error[E0382]: borrow of moved value: `cfg` in loader' },
];

/** A varied, realistic-looking openai-chat transcript (~15–25 tool calls, one confirmed fix). */
export function syntheticSession(r: () => number, i: number): string {
  const repo = pick(r, REPOS);
  const comp = pick(r, COMPONENTS);
  const lang = pick(r, LANGS);
  const file = `src/${comp.replace(/\s+/g, '_')}/${pick(r, ['index', 'core', 'handler', 'util'])}.${lang.ext}`;
  const lines: unknown[] = [];
  let t = Date.parse('2026-11-01T00:00:00Z') + i * 60_000;
  const ts = (): string => new Date((t += 1500)).toISOString();
  let n = 0;
  const call = (name: string, args: Record<string, unknown>, output: string, error = false): void => {
    const id = `call_${i}_${n++}`;
    lines.push({ role: 'assistant', content: '', tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }], timestamp: ts() });
    lines.push({ role: 'tool', tool_call_id: id, content: JSON.stringify({ output, exit_code: error ? 1 : 0 }), timestamp: ts() });
  };
  lines.push({ role: 'system', content: `# ${repo} agent rules\nWork in small steps. Run ${lang.test} before finishing.`, timestamp: ts() });
  lines.push({ role: 'user', content: `${pick(r, VERBS)} the ${comp} in ${repo} (${file}). ${r() < 0.3 ? 'Never change the public API.' : 'Keep the diff small.'}`, timestamp: ts() });
  const extra = 5 + Math.floor(r() * 8);
  call('read_file', { path: file }, `// ${comp}\n${'export const x = 1;\n'.repeat(20 + Math.floor(r() * 60))}`);
  call('search_files', { pattern: comp.split(' ')[0] ?? comp, path: 'src' }, `${file}:12: ${comp}`);
  for (let k = 0; k < extra; k++) call('read_file', { path: `src/${pick(r, COMPONENTS).replace(/\s+/g, '_')}/index.${lang.ext}` }, 'line\n'.repeat(30));
  call('terminal', { command: lang.test }, `FAIL\n${lang.err}`, true);
  call('patch', { path: file, old_string: 'x = 1', new_string: `x = ${i}` }, 'patched');
  call('terminal', { command: lang.test }, `ok ${10 + Math.floor(r() * 90)} passed`);
  if (r() < 0.5) call('terminal', { command: lang.build }, 'built');
  if (r() < 0.1) call('terminal', { command: 'git push' }, `pushed with token ghp_${'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'.split('').sort(() => r() - 0.5).join('')}`);
  lines.push({ role: 'assistant', content: `Done: ${comp} updated and ${lang.test} passes.`, finish_reason: 'stop', timestamp: ts() });
  return `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
}

interface Target {
  readonly tool: string;
  readonly key: string;
}

/** A session's first ten tool calls as (tool, salient key), and all the paths it touched. */
function targets(s: LoadedSession): { calls: Target[]; paths: string[] } {
  const cwd = s.meta.cwd?.replace(/\/$/, '');
  const rel = (p: string): string => (cwd && p.startsWith(`${cwd}/`) ? p.slice(cwd.length + 1) : p);
  const calls = pairToolCalls(s.messages);
  const first = calls.slice(0, 10).map((c) => ({ tool: c.tool, key: c.kind === 'read' || c.kind === 'edit' ? rel(c.salient) : c.salient }));
  const paths = [...new Set(calls.filter((c) => (c.kind === 'read' || c.kind === 'edit') && c.salient.length > 0).map((c) => rel(c.salient)))];
  return { calls: first, paths };
}

/** `needle` occurs in `content` as a whole token (not inside a longer word or path). */
function containsToken(content: string, needle: string): boolean {
  if (needle.length === 0) return false;
  const escaped = needle.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?:^|[^\\w/.-])${escaped}(?:$|[^\\w/-])`).test(content);
}

/** The bootstrap named the call's target: the command head, the path (or its last two parts), the pattern. */
function anticipated(content: string, key: string): boolean {
  if (key.length < 2) return false;
  if (containsToken(content, key)) return true;
  const base = key.split('/').slice(-2).join('/');
  return key.includes('/') && base.length >= 4 && base !== key && containsToken(content, base);
}

function hitRates(content: string, t: { calls: Target[]; paths: string[] }): { calls: number; paths: number } {
  const callHits = t.calls.filter((c) => containsToken(content, c.tool) && anticipated(content, c.key)).length;
  const pathHits = t.paths.filter((p) => anticipated(content, p)).length;
  return { calls: t.calls.length ? callHits / t.calls.length : 0, paths: t.paths.length ? pathHits / t.paths.length : 0 };
}

function freshStore(path: string): { db: Db; store: TemplateStore } {
  rmSync(path, { force: true });
  rmSync(`${path}-wal`, { force: true });
  rmSync(`${path}-shm`, { force: true });
  const db = openDb(path);
  return { db, store: new TemplateStore(db) };
}

async function leaveOneOut(files: readonly string[], sessions: readonly LoadedSession[], dir: string, counter: TokenCounter, seed: number): Promise<Record<string, unknown>> {
  const logger = silentLogger();
  const r = rng(seed);
  const rows: Record<string, unknown>[] = [];
  let sumCalls = 0;
  let sumPaths = 0;
  let sumBaseCalls = 0;
  let sumBasePaths = 0;
  let counted = 0;
  for (let i = 0; i < sessions.length; i++) {
    const s = sessions[i];
    if (!s) continue;
    const t = targets(s);
    const task = userRequests(s.messages)[0] ?? '';
    if (t.calls.length === 0 || task.length === 0) continue;
    const { db, store } = freshStore(join(dir, 'loo.db'));
    try {
      for (let j = 0; j < sessions.length; j++) {
        const o = sessions[j];
        if (j === i || !o) continue;
        await harvestSession({ sessionId: o.sessionId, messages: o.messages, meta: { repo: o.meta.repo, cwd: o.meta.cwd }, source: files[j] ?? '' }, { store, tokenCounter: counter, logger });
      }
      // What an agent would pass: its git remote, else the name of its working directory.
      const repo = s.meta.repo ?? (s.meta.cwd ? s.meta.cwd.replace(/\/+$/, '').split('/').pop() : undefined);
      const boot = bootstrap({ task, repo, budgetTokens: 2000 }, { store, tokenCounter: counter });
      const content = boot.messages.map((m) => m.content).join('\n');
      const hits = hitRates(content, t);
      // Baseline: as many templates, drawn at random (seeded), rendered the same way.
      const all = store.list().map((x) => x.id);
      const k = Math.max(1, boot.candidates.length);
      const chosen: Template[] = [];
      const pool = [...all];
      while (chosen.length < k && pool.length > 0) {
        const id = pool.splice(Math.floor(r() * pool.length), 1)[0] ?? '';
        const tpl = store.get(id);
        if (tpl) chosen.push(tpl);
      }
      const base = renderBootstrap(
        { templates: chosen, knowledge: store.knowledgeFor(chosen.map((c) => c.id), undefined), patterns: store.patterns(undefined), budgetTokens: 2000 },
        counter,
      );
      const baseHits = hitRates(base.messages.map((m) => m.content).join('\n'), t);
      rows.push({
        session: s.sessionId.slice(0, 60),
        calls: t.calls.length,
        paths: t.paths.length,
        callHitRate: round(hits.calls, 3),
        pathHitRate: round(hits.paths, 3),
        baselineCallHitRate: round(baseHits.calls, 3),
        baselinePathHitRate: round(baseHits.paths, 3),
        tokens: boot.tokens,
      });
      sumCalls += hits.calls;
      sumPaths += hits.paths;
      sumBaseCalls += baseHits.calls;
      sumBasePaths += baseHits.paths;
      counted++;
    } finally {
      db.close();
    }
  }
  const mean = (x: number): number => round(counted ? x / counted : 0, 3);
  return {
    sessions: counted,
    meanCallHitRate: mean(sumCalls),
    meanPathHitRate: mean(sumPaths),
    baselineMeanCallHitRate: mean(sumBaseCalls),
    baselineMeanPathHitRate: mean(sumBasePaths),
    perSession: rows,
  };
}

/** Run the warm bench; returns plain JSON-able figures. */
export async function benchWarm(opts: BenchWarmOptions): Promise<Record<string, unknown>> {
  const counter = createTokenCounter();
  const logger = silentLogger();
  const seed = opts.seed ?? 1234;
  const dir = join(opts.tmpDir, `bench-warm-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  try {
    // 1. Harvest the real corpus.
    const files = readdirSync(opts.corpusDir)
      .filter((f) => f.endsWith('.jsonl'))
      .sort()
      .map((f) => join(opts.corpusDir, f));
    const corpusBytes = files.reduce((n, f) => n + statSync(f).size, 0);
    const corpus = freshStore(join(dir, 'corpus.db'));
    const c0 = performance.now();
    const corpusRun = await harvestFiles(files, { store: corpus.store, tokenCounter: counter, logger });
    const corpusMs = performance.now() - c0;
    corpus.db.close();

    // 2. Throughput on many generated transcripts (distinct tasks, repos, fixes).
    const n = opts.generatedFiles ?? 2000;
    const genDir = join(dir, 'generated');
    mkdirSync(genDir, { recursive: true });
    const r = rng(seed);
    let genBytes = 0;
    for (let i = 0; i < n; i++) {
      const text = syntheticSession(r, i);
      genBytes += Buffer.byteLength(text);
      writeFileSync(join(genDir, `gen-${String(i).padStart(6, '0')}.jsonl`), text);
    }
    const gen = freshStore(join(dir, 'generated.db'));
    const g0 = performance.now();
    const genRun = await harvestFiles([genDir], { store: gen.store, tokenCounter: counter, logger });
    const genMs = performance.now() - g0;

    // 3. Bootstrap latency against the generated store.
    const samples = opts.bootstrapSamples ?? 500;
    const lat: number[] = [];
    const words = [...COMPONENTS, ...VERBS, ...REPOS].join(' ').split(/\s+/);
    let overBudget = 0;
    for (let i = 0; i < samples; i++) {
      const task = Array.from({ length: 3 + Math.floor(r() * 8) }, () => pick(r, words)).join(' ');
      const budget = pick(r, [500, 1000, 2000, 4000]);
      const t0 = performance.now();
      const b = bootstrap({ task, repo: r() < 0.5 ? pick(r, REPOS) : undefined, budgetTokens: budget }, { store: gen.store, tokenCounter: counter });
      lat.push(performance.now() - t0);
      if (b.tokens > budget) overBudget++;
    }
    lat.sort((a, b) => a - b);
    const genTemplates = gen.store.count();
    gen.db.close();

    // 4. Leave-one-out replay on the real corpus.
    const sessions = await Promise.all(files.map((f) => loadTranscript(f)));
    const loo = await leaveOneOut(files, sessions, dir, counter, seed);

    const genFps = genRun.files / (genMs / 1000);
    const corpusFps = corpusRun.files / (corpusMs / 1000);
    return {
      corpus: {
        files: corpusRun.files,
        harvested: corpusRun.harvested,
        failed: corpusRun.failed.length,
        bytes: corpusBytes,
        filesPerSecond: round(corpusFps, 1),
        mbPerSecond: round(corpusBytes / 1e6 / (corpusMs / 1000), 2),
      },
      generated: {
        files: genRun.files,
        harvested: genRun.harvested,
        merged: genRun.merged,
        templates: genTemplates,
        avgFileBytes: Math.round(genBytes / Math.max(1, n)),
        filesPerSecond: round(genFps, 1),
        extrapolated20kFilesSeconds: round(20_000 / genFps, 0),
        extrapolated20kCorpusSizedFilesSeconds: round((20_000 * (corpusBytes / Math.max(1, files.length))) / 1e6 / (corpusBytes / 1e6 / (corpusMs / 1000)), 0),
      },
      bootstrap: {
        samples,
        templatesInStore: genTemplates,
        p50Ms: round(percentile(lat, 50), 2),
        p99Ms: round(percentile(lat, 99), 2),
        maxMs: round(lat[lat.length - 1] ?? 0, 2),
        overBudget,
      },
      leaveOneOut: loo,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

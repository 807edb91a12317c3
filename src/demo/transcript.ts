/**
 * A deterministic, generated agent session in the openai-chat (hermes-style) JSONL format:
 * the kind of cruft contextd exists for — near-identical grep outputs, files read and re-read,
 * a long stack trace whose news is its last line, a path explored and abandoned — plus the
 * things that must survive compaction: the system prompt, the user's constraints, a config
 * value seen once in an old output and referred to later, and the final fix.
 * Used by `contextd demo`, the benchmarks and the end-to-end tests.
 */
import { seededRandom } from '../util/random.js';

export interface DemoLine {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly content: string;
  readonly tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  readonly tool_call_id?: string;
  readonly timestamp: string;
}

export interface DemoOptions {
  /** Investigation rounds; each adds ~1.5–2k tokens (default 12). */
  readonly rounds?: number;
  /** Session start, epoch ms (default 2026-01-05T09:00:00Z). */
  readonly startMs?: number;
  /** A tag mixed into outputs so several demo sessions differ (default 'a'). */
  readonly variant?: string;
}

const MODULES = ['billing', 'invoices', 'ledger', 'payments', 'refunds', 'tax', 'currency', 'accounts'];

function grepOutput(module: string, round: number, rand: () => number): string {
  const lines: string[] = [];
  for (let i = 0; i < 28; i++) {
    const file = `src/${MODULES[(i + round) % MODULES.length]}/${module}_${i % 7}.ts`;
    lines.push(`${file}:${10 + ((i * 17) % 400)}:  const total = computeTotal(items, { rounding: 'half-even' }); // ${Math.floor(rand() * 3) === 0 ? 'TODO' : 'ok'}`);
  }
  return lines.join('\n');
}

function fileBody(path: string, version: number): string {
  const lines = [`// ${path} (revision ${version})`, `import { Decimal } from 'decimal.js';`, ''];
  for (let i = 0; i < 40; i++) lines.push(`export function step${i}(x: Decimal): Decimal { return x.mul(${i + 1}).div(${(i % 5) + 2}); }`);
  return lines.join('\n');
}

function stackTrace(round: number): string {
  const frames: string[] = [];
  for (let i = 0; i < 45; i++) frames.push(`    at Module._compile (node:internal/modules/cjs/loader:${1100 + i}:14)`);
  frames.splice(3, 0, `    at computeTotal (/srv/app/src/billing/total.ts:${88 + round}:11)`);
  return [
    `FAIL test/billing/total.test.ts > rounds half-even totals`,
    `AssertionError: expected '10.05' to equal '10.04'`,
    ...frames,
    `Test Files  1 failed (1)`,
    `Tests  1 failed | 41 passed (42)`,
  ].join('\n');
}

/** The demo session as JSONL lines (objects), in order. */
export function demoTranscript(options: DemoOptions = {}): DemoLine[] {
  const rounds = options.rounds ?? 12;
  const variant = options.variant ?? 'a';
  const rand = seededRandom(0xc0ffee ^ variant.charCodeAt(0));
  let t = options.startMs ?? Date.UTC(2026, 0, 5, 9, 0, 0);
  const ts = () => {
    t += 4_000 + Math.floor(rand() * 20_000);
    return new Date(t).toISOString().replace('Z', '');
  };
  const out: DemoLine[] = [];
  let callN = 0;
  const call = (name: string, args: Record<string, unknown>, result: string, text = '') => {
    const id = `call_${variant}_${++callN}`;
    out.push({ role: 'assistant', content: text, tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }], timestamp: ts() });
    out.push({ role: 'tool', content: result, tool_call_id: id, timestamp: ts() });
  };

  out.push({ role: 'system', content: 'You are a careful coding agent working in /srv/app (TypeScript, vitest). Use the tools to read, search and edit files. Never push to main; never edit generated files under src/gen/.', timestamp: ts() });
  out.push({ role: 'user', content: `Fix the rounding bug in the billing totals (ticket BILL-${412 + variant.charCodeAt(0) - 97}). Constraint: keep the public API of computeTotal unchanged and do not touch src/gen/. Run the billing tests before you finish.`, timestamp: ts() });
  call('read_file', { path: 'config/billing.yaml' }, `currency: EUR\nrounding_mode: half-even\nmax_line_items: 500\nledger_precision: 4\nretry_backoff_ms: 250`, 'Let me look at the billing config first.');
  for (let r = 0; r < rounds; r++) {
    const module = MODULES[r % MODULES.length] as string;
    call('grep', { pattern: 'computeTotal', path: 'src/' }, grepOutput(module, r % 3, rand), r === 0 ? 'Searching for every caller of computeTotal.' : '');
    call('read_file', { path: `src/billing/total.ts` }, fileBody('src/billing/total.ts', r + 1));
    if (r % 3 === 1) {
      call('run_tests', { command: 'npx vitest run test/billing' }, stackTrace(r), '');
      out.push({ role: 'assistant', content: `Maybe the bug is in the currency conversion in src/${module}/convert.ts — let me try that path.`, timestamp: ts() });
      call('read_file', { path: `src/${module}/convert.ts` }, fileBody(`src/${module}/convert.ts`, 1));
      out.push({ role: 'assistant', content: `That didn't work out: convert.ts is not involved, the conversion is exact. Back to total.ts instead.`, timestamp: ts() });
    } else {
      out.push({ role: 'assistant', content: `Round ${r + 1}: the ${module} callers all pass rounding 'half-even'; the discrepancy must come from summing before rounding.`, timestamp: ts() });
    }
    if (r === Math.floor(rounds / 2)) {
      out.push({ role: 'user', content: 'Also make sure the ledger precision from the config is respected when you round.', timestamp: ts() });
    }
  }
  out.push({ role: 'assistant', content: 'Decision: round each line item with the configured ledger_precision (4) before summing, then round the total half-even to 2 decimals. The fix is in src/billing/total.ts.', timestamp: ts() });
  call('edit_file', { path: 'src/billing/total.ts', old: 'sum(items).round(2)', new: 'sum(items.map((i) => i.round(4))).round(2)' }, 'Edited src/billing/total.ts (1 replacement).');
  call('run_tests', { command: 'npx vitest run test/billing' }, 'Test Files  3 passed (3)\nTests  42 passed (42)');
  out.push({ role: 'assistant', content: 'Fixed: line items are rounded to ledger_precision 4 before summing; totals round half-even to 2 decimals. All 42 billing tests pass.', timestamp: ts() });
  return out;
}

/** The demo session as JSONL text, one object per line. */
export function demoTranscriptJsonl(options: DemoOptions = {}): string {
  return demoTranscript(options).map((l) => JSON.stringify(l)).join('\n') + '\n';
}

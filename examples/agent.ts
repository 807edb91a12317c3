/**
 * A tiny agent that lets contextd manage its context.
 *
 * It writes its conversation as an openai-chat transcript (one JSON message per line), connects
 * to the daemon with ContextdClient, subscribes by transcript path, and when a
 * `compaction.proposed` plan arrives it replaces each edit's message range in its in-memory
 * message list with the edit's summary, then acks what it applied. If no plan is pushed in
 * time it asks for one with `session.compact`.
 *
 * Run against a daemon (Node 20 cannot run .ts directly; compile this file and what it imports
 * to a folder under node_modules so `zod`/`pino` resolve):
 *   npx tsc --outDir node_modules/.cache/contextd-ex --rootDir . --module nodenext \
 *     --moduleResolution nodenext --target es2022 --strict --skipLibCheck --types node examples/agent.ts
 *   node node_modules/.cache/contextd-ex/examples/agent.js --socket "$XDG_RUNTIME_DIR/contextd.sock" \
 *     --transcript ~/.hermes/sessions/demo-agent.jsonl --turns 12 [--wait-ms 10000]
 * The transcript should live in a directory the daemon watches, or the daemon must start
 * tailing a file named by `session.subscribe {transcriptPath}`.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ContextdClient } from '../src/ipc/client.js';
import { isRpcError } from '../src/ipc/errors.js';
import type { WirePlan } from '../src/ipc/results.js';

/** One openai-chat message, as written to the transcript and kept in memory. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
  name?: string;
  timestamp?: string;
}

export interface ApplyResult {
  readonly applied: string[];
  readonly skipped: Array<{ editId: string; why: string }>;
}

/**
 * Replace each edit's inclusive `messageRange` with its summary message. Edits are applied from
 * the end of the list backwards so earlier indexes stay valid; an edit whose range is out of
 * bounds or overlaps another is skipped (and reported in the ack).
 */
export function applyPlan(messages: ChatMessage[], plan: WirePlan): ApplyResult {
  const applied: string[] = [];
  const skipped: Array<{ editId: string; why: string }> = [];
  const edits = [...plan.edits].sort((a, b) => b.messageRange.start - a.messageRange.start);
  let floor = Number.POSITIVE_INFINITY; // start of the last applied range: later edits must end before it
  for (const edit of edits) {
    const { start, end } = edit.messageRange;
    if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end < start || end >= messages.length) {
      skipped.push({ editId: edit.editId, why: `range ${start}..${end} is outside 0..${messages.length - 1}` });
      continue;
    }
    if (end >= floor) {
      skipped.push({ editId: edit.editId, why: `range ${start}..${end} overlaps another edit` });
      continue;
    }
    const role = (['system', 'user', 'assistant'] as const).find((r) => r === edit.summary.role) ?? 'user';
    messages.splice(start, end - start + 1, { role, content: edit.summary.content });
    floor = start;
    applied.push(edit.editId);
  }
  return { applied: applied.reverse(), skipped };
}

/** Rough token estimate for the printout (4 characters per token). */
export function estimateTokens(messages: readonly ChatMessage[]): number {
  return Math.ceil(messages.reduce((n, m) => n + m.content.length + (m.tool_calls ? JSON.stringify(m.tool_calls).length : 0), 0) / 4);
}

export interface AgentOptions {
  readonly socketPath?: string;
  readonly transcriptPath: string;
  /** Tool-using turns to write (default 20). */
  readonly turns?: number;
  /** Characters of each (repetitive) tool output (default 6000). */
  readonly toolOutputChars?: number;
  /** How long to wait for a pushed plan before asking with session.compact (default 10 s). */
  readonly waitForPlanMs?: number;
  /** How long to keep retrying the subscription while the daemon discovers the file (default 10 s). */
  readonly subscribeTimeoutMs?: number;
  readonly log?: (line: string) => void;
}

export interface AgentOutcome {
  readonly sessionId: string;
  readonly messages: ChatMessage[];
  readonly plans: Array<{ planId: string; via: 'push' | 'request'; applied: string[]; skipped: number }>;
  readonly tokensBefore: number;
  readonly tokensAfter: number;
}

/** Run the agent to completion: write turns, take at least one plan, ack it, end the session. */
export async function runAgent(options: AgentOptions): Promise<AgentOutcome> {
  const log = options.log ?? ((line: string) => process.stdout.write(line + '\n'));
  const turns = options.turns ?? 20;
  const messages: ChatMessage[] = [];
  mkdirSync(path.dirname(options.transcriptPath), { recursive: true });
  writeFileSync(options.transcriptPath, '');
  const append = (m: ChatMessage): void => {
    const line: ChatMessage = { ...m, timestamp: new Date().toISOString() };
    messages.push(line);
    appendFileSync(options.transcriptPath, JSON.stringify(line) + '\n');
  };

  append({ role: 'system', content: 'You are a careful coding agent. Keep answers short.' });
  append({ role: 'user', content: 'Find why the billing export drops rows and fix it.' });

  const client = new ContextdClient({
    ...(options.socketPath !== undefined ? { socketPath: options.socketPath } : {}),
    clientInfo: { name: 'contextd-example-agent', version: '0.1.0' },
    capabilities: { applyEdits: true },
  });
  await client.connect();
  log(`connected to ${client.socketPath} (server ${client.server?.server.name} ${client.server?.server.version})`);

  const plans: Array<{ planId: string; via: 'push' | 'request'; applied: string[]; skipped: number }> = [];
  let resolveFirst!: () => void;
  const firstPlan = new Promise<void>((r) => (resolveFirst = r));
  const seen = new Set<string>();
  const handle = async (plan: WirePlan, via: 'push' | 'request'): Promise<void> => {
    // A plan asked for with session.compact is also pushed: handle each plan once.
    if (plan.dryRun || seen.has(plan.planId)) return;
    seen.add(plan.planId);
    const before = estimateTokens(messages);
    // Try the plan on a copy first: the live list only changes once the daemon accepted the
    // ack, so a plan that expired meanwhile (superseded by a newer one) leaves it untouched.
    const trial = applyPlan([...messages], plan);
    for (const s of trial.skipped) log(`  skipped ${s.editId}: ${s.why}`);
    try {
      await client.ack({
        planId: plan.planId,
        applied: trial.applied.length > 0,
        editIds: trial.applied,
        ...(trial.skipped.length > 0 ? { reason: trial.skipped.map((s) => `${s.editId}: ${s.why}`).join('; ') } : {}),
      });
    } catch (err) {
      if (isRpcError(err, -32002)) {
        log(`plan ${plan.planId} expired before it was applied: ${err.message}`);
        return;
      }
      throw err;
    }
    const applied = trial.applied.length > 0 ? applyPlan(messages, { ...plan, edits: plan.edits.filter((e) => trial.applied.includes(e.editId)) }).applied : [];
    log(`plan ${plan.planId} (${via}): applied ${applied.length}/${plan.edits.length} edits, ~${before} → ~${estimateTokens(messages)} tokens`);
    plans.push({ planId: plan.planId, via, applied, skipped: trial.skipped.length });
    resolveFirst();
  };
  // Plans are handled one at a time, in arrival order.
  let queue = Promise.resolve();
  client.on('compaction.proposed', (plan) => {
    queue = queue.then(() => handle(plan, 'push')).catch((err: unknown) => log(`could not handle plan ${plan.planId}: ${String(err)}`));
  });
  client.on('session.headroom', (h) => log(`headroom ${(h.headroom * 100).toFixed(1)}% (${h.tokens}/${h.total} tokens)`));

  try {
    const sessionId = await subscribeWhenKnown(client, options.transcriptPath, options.subscribeTimeoutMs ?? 10_000);
    log(`subscribed to session ${sessionId}`);

    const output = (turn: number): string => {
      const row = `row ${turn}: invoice_id,amount,currency,status — exported ok\n`;
      return `$ cat exports/billing-${turn}.csv\n` + row.repeat(Math.ceil((options.toolOutputChars ?? 6000) / row.length));
    };
    for (let turn = 0; turn < turns; turn++) {
      const callId = `call_${turn}`;
      append({
        role: 'assistant',
        content: '',
        tool_calls: [{ id: callId, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: `exports/billing-${turn}.csv` }) } }],
      });
      append({ role: 'tool', tool_call_id: callId, name: 'read_file', content: output(turn) });
      append({ role: 'assistant', content: `Export ${turn} looks complete; checking the next one.` });
    }
    const tokensBefore = estimateTokens(messages);
    log(`wrote ${messages.length} messages (~${tokensBefore} tokens) to ${options.transcriptPath}`);

    const waited = await Promise.race([
      firstPlan.then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), options.waitForPlanMs ?? 10_000).unref()),
    ]);
    if (!waited) {
      log('no plan pushed yet; asking with session.compact');
      const plan = await client.compact(sessionId);
      queue = queue.then(() => handle(plan, 'request'));
    }
    await queue;
    const tokensAfter = estimateTokens(messages);
    const end = await client.endSession(sessionId, 'success');
    log(`done: ${plans.length} plan(s), ~${tokensBefore} → ~${tokensAfter} tokens, harvested ${end.harvested}`);
    return { sessionId, messages, plans, tokensBefore, tokensAfter };
  } finally {
    await client.close();
  }
}

/** Subscribe by path, retrying while the daemon has not discovered the file yet. */
async function subscribeWhenKnown(client: ContextdClient, transcriptPath: string, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let delay = 100;
  for (;;) {
    try {
      return (await client.subscribe({ transcriptPath })).sessionId;
    } catch (err) {
      const retriable = isRpcError(err, -32001) || isRpcError(err, -32602);
      if (!retriable || Date.now() + delay > deadline) throw err;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 1000);
    }
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      socket: { type: 'string' },
      transcript: { type: 'string' },
      turns: { type: 'string' },
      'wait-ms': { type: 'string' },
    },
  });
  const transcriptPath = path.resolve(values.transcript ?? path.join(process.cwd(), 'example-agent.jsonl'));
  await runAgent({
    transcriptPath,
    ...(values.socket !== undefined ? { socketPath: values.socket } : {}),
    ...(values.turns !== undefined ? { turns: Number(values.turns) } : {}),
    ...(values['wait-ms'] !== undefined ? { waitForPlanMs: Number(values['wait-ms']) } : {}),
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`example agent failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}

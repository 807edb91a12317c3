import type { Command } from 'commander';
import { appendFileSync, createReadStream, mkdirSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, basename } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { Daemon } from '../daemon/daemon.js';
import { resolveDaemonOptions } from '../daemon/config.js';
import { ContextdClient, type WirePlan } from '../ipc/client.js';
import { demoLegend, recallExcerpt, summaryBlock } from '../demo/explain.js';
import { archivedText } from '../store/index.js';
import { demoTranscript } from '../demo/transcript.js';
import { describeError } from '../util/errors.js';
import { parsePositiveInt, pct, printLine } from './output.js';

interface DemoFlags {
  file?: string;
  budget: number;
  rounds: number;
  delayMs: number;
  keep?: boolean;
}

const BAR_WIDTH = 30;

function bar(headroom: number, width = BAR_WIDTH): string {
  const used = Math.max(0, Math.min(width, Math.round((1 - headroom) * width)));
  return `[${'#'.repeat(used)}${'.'.repeat(width - used)}]`;
}

async function* linesOf(flags: DemoFlags): AsyncGenerator<string> {
  if (flags.file) {
    const rl = createInterface({ input: createReadStream(flags.file), crlfDelay: Infinity });
    for await (const line of rl) if (line.trim()) yield line;
    return;
  }
  for (const l of demoTranscript({ rounds: flags.rounds })) yield JSON.stringify(l);
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  let lastErr: unknown;
  while (Date.now() < until) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      lastErr = err;
    }
    await sleep(50);
  }
  throw new Error(`demo: timed out waiting for ${what}${lastErr ? ` (${describeError(lastErr)})` : ''}`);
}

/**
 * Replays a transcript line by line into a temp dir while a real daemon (in this process)
 * watches it; acts as the agent: subscribes over the socket, applies each pushed plan and
 * acks it, and prints headroom as it changes.
 */
export async function runDemo(flags: DemoFlags): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-demo-'));
  const sessions = join(dir, 'sessions');
  mkdirSync(sessions);
  const transcript = join(sessions, flags.file ? basename(flags.file) : 'demo-billing-fix.jsonl');
  writeFileSync(transcript, '');
  const logFile = join(dir, 'contextd.log');
  const options = resolveDaemonOptions({}, { watch: [sessions], socket: join(dir, 'contextd.sock'), state: join(dir, 'state'), budgetTokens: flags.budget, minPlanIntervalMs: 250 });
  const logger = pino({ level: 'debug' }, pino.destination({ dest: logFile, sync: true }));
  const daemon = new Daemon(options, { logger });
  await daemon.start();
  printLine(`contextd demo: daemon on ${options.socketPath}, state ${options.stateDir}, budget ${flags.budget} tokens, reserve ${pct(options.reserveRatio)}, soft watermark ${pct(options.softWatermark)}`);
  printLine(`replaying ${flags.file ?? 'the built-in billing-bug session'} into ${transcript}`);
  for (const l of demoLegend(BAR_WIDTH)) printLine(l);
  printLine();

  const client = new ContextdClient({ socketPath: options.socketPath, clientInfo: { name: 'contextd-demo', version: '1' }, reconnect: false });
  try {
    await client.connect();
    let sessionId: string | undefined;
    let applied = 0;
    let saved = 0;
    /** The first edit that archived its originals: its summary is shown and recalled at the end. */
    let shown: { handle: string; reason: string; text: string } | undefined;
    let lastShown = Number.NaN;
    const acks: Promise<unknown>[] = [];

    client.on('compaction.proposed', (plan: WirePlan) => {
      const reasons = [...new Set(plan.edits.map((e) => e.reason))].join(', ');
      const tokens = plan.edits.reduce((a, e) => a + e.tokensBefore - e.tokensAfter, 0);
      printLine(`  ⇢ plan ${plan.planId}: ${plan.edits.length} edit(s) [${reasons}], headroom ${pct(plan.headroomBefore)} → ${pct(plan.headroomAfter)}, −${tokens} tokens`);
      const withHandle = plan.edits.find((e) => e.handle !== undefined);
      if (!shown && withHandle?.handle) shown = { handle: withHandle.handle, reason: withHandle.reason, text: withHandle.summary.content };
      acks.push(
        client.ack({ planId: plan.planId, applied: true }).then(
          () => {
            applied += plan.edits.length;
            saved += tokens;
          },
          (err: unknown) => printLine(`  ⇢ ack failed: ${describeError(err)}`),
        ),
      );
    });

    let n = 0;
    for await (const line of linesOf(flags)) {
      appendFileSync(transcript, `${line}\n`);
      n++;
      if (!sessionId) {
        sessionId = (await waitFor('the daemon to pick up the transcript', async () => (await client.subscribe({ transcriptPath: transcript })).sessionId)) as string;
        printLine(`subscribed to session ${sessionId}`);
      }
      await sleep(flags.delayMs);
      const h = await client.headroom(sessionId);
      if (Number.isNaN(lastShown) || Math.abs(h.headroom - lastShown) >= 0.02) {
        lastShown = h.headroom;
        printLine(`${String(n).padStart(4)} lines ${bar(h.headroom)} ${String(h.tokens).padStart(6)}/${h.total} tokens, headroom ${pct(h.headroom)}, ${h.sections} sections`);
      }
    }
    await sleep(Math.max(300, flags.delayMs * 3));
    await Promise.allSettled(acks);
    const final = sessionId ? await client.headroom(sessionId) : undefined;
    printLine();
    if (final) printLine(`done: ${n} lines, ${final.tokens}/${final.total} tokens in context, headroom ${pct(final.headroom)}; ${applied} edit(s) applied, ${saved} tokens summarized away`);
    if (shown && sessionId) {
      printLine();
      for (const l of summaryBlock(shown.handle, shown.reason, shown.text)) printLine(l);
      // Recalled while the daemon and its state still exist (they are deleted below unless --keep).
      const r = await client.recall(sessionId, shown.handle);
      printLine();
      printLine(`nothing is lost: recall ${shown.handle} returns ${r.messages.length} original message(s); the first lines:`);
      for (const l of recallExcerpt(archivedText(r.messages))) printLine(l);
      if (flags.keep) printLine(`recall them all later with: contextd recall --state ${options.stateDir} ${shown.handle}`);
    } else {
      printLine('no plan archived anything in this run (try a smaller --budget)');
    }
  } finally {
    await client.close();
    await daemon.stop('demo finished');
    if (!flags.keep) rmSync(dir, { recursive: true, force: true });
  }
  printLine(flags.keep ? `kept the demo's state in ${options.stateDir} (logs in ${logFile})` : 'the demo\'s temp dir is deleted (run with --keep to keep its state and recall from it)');
}

/** `contextd demo`: replays a sample transcript and shows the daemon at work, live. */
export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('replay a sample transcript into a temp dir while a real daemon watches it, and show headroom and plans live')
    .option('--file <transcript>', 'replay this transcript instead of the built-in session')
    .option('--budget <tokens>', 'context window of the demo session', parsePositiveInt('--budget'), 24_000)
    .option('--rounds <n>', 'length of the built-in session', parsePositiveInt('--rounds'), 14)
    .option('--delay-ms <ms>', 'pause between lines', (v) => Math.max(0, Number(v) || 0), 25)
    .option('--keep', 'keep the temp dir (state, logs) afterwards and print the recall command that reads it')
    .action(async (flags: DemoFlags) => {
      await runDemo(flags);
    });
}

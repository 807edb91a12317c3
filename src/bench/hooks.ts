/**
 * Hook latency: wall time of `contextd hook claude-code` as an agent runs it (a fresh process,
 * one UserPromptSubmit event on stdin, first prompt of a session), with the daemon up and down.
 * A bare `node -e 0` is measured alongside: the part of the figure that is Node's own start-up.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nowMs, startDaemonProcess, summarize } from './harness.js';

const BIN = fileURLToPath(new URL('../../../bin/contextd.js', import.meta.url));

function timeOnce(args: readonly string[], input: string): Promise<{ ms: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const t0 = nowMs();
    const p = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'ignore'] });
    let stdout = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.on('error', reject);
    p.on('exit', () => resolve({ ms: nowMs() - t0, stdout }));
    p.stdin.end(input);
  });
}

async function series(n: number, args: readonly string[], input: string): Promise<ReturnType<typeof summarize>> {
  const samples: number[] = [];
  for (let i = 0; i < n; i++) samples.push((await timeOnce(args, input)).ms);
  return summarize(samples);
}

export async function benchHooks(opts: { runs?: number } = {}): Promise<Record<string, unknown>> {
  const runs = opts.runs ?? 30;
  const dir = mkdtempSync(join(tmpdir(), 'contextd-bench-hooks-'));
  try {
    const state = join(dir, 'state');
    const socket = join(dir, 'd.sock');
    const event = JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'bench', prompt: 'fix the failing build in src/parser.ts', cwd: dir });
    const hookArgs = [BIN, 'hook', 'claude-code', '--state', state, '--socket', socket];
    const nodeBaseline = await series(runs, ['-e', '0'], '');
    const daemonDown = await series(runs, hookArgs, event);
    const daemon = await startDaemonProcess(['--watch', join(dir, 'none'), '--state', state, '--socket', socket]);
    let daemonUp;
    try {
      daemonUp = await series(runs, hookArgs, event);
    } finally {
      await daemon.stop();
    }
    return { scenario: 'hooks', unit: 'ms (process wall time)', runs, nodeBaseline, daemonDown, daemonUp };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Transcript lines the daemon read but could not apply are not lost: the session's model is
 * rebuilt from its transcript, the failure is in daemon.status while it lasts, the rebuild is
 * tried again on the next append, and other sessions go on. (They were lost, found by an audit:
 * a batch whose apply threw was logged and dropped — the model silently short of the
 * transcript, maybe half-applied — and a batch the session manager could not take was gone
 * with the tailer's offset past it.) A daemon in this process, real socket, real SQLite, real
 * files appended while the tailer watches; each result is compared with a fresh daemon reading
 * the same files.
 *
 * No transcript line makes the real ingest throw, so the faults are injected at narrow seams the
 * daemon already takes in its deps, each said where it is used: the token counter (throwing as
 * tiktoken does when it cannot load, EMFILE) and the log stream (a write that throws).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { pino, type Logger } from 'pino';
import { Daemon } from '../../src/daemon/daemon.js';
import { resolveDaemonOptions } from '../../src/daemon/config.js';
import { type TokenCounter } from '../../src/model/tokens.js';
import { ContextdClient } from '../../src/ipc/client.js';
import { RpcError, RpcErrorCode } from '../../src/ipc/errors.js';
import { failingCounter, until } from './helpers.js';

const dirs: string[] = [];
const running: { daemon: Daemon; c: ContextdClient }[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) {
    await r.c.close();
    await r.daemon.stop();
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface Row {
  sessionId: string;
  file: string;
  tokens: number;
  sections: number;
  inMemory: boolean;
  failure: { code: string; message: string; since: number } | null;
}

const line = (role: 'user' | 'assistant', content: string): string => `${JSON.stringify({ role, content })}\n`;
const lines = (tag: string, n: number): string => Array.from({ length: n }, (_, i) => line(i % 2 === 0 ? 'user' : 'assistant', `${tag} message ${i}: the build of module ${i} passed after the fix to its parser`)).join('');

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-ingest-failure-'));
  dirs.push(dir);
  mkdirSync(join(dir, 'sessions'));
  return dir;
}

/** A daemon watching `dir/sessions` with its state in `state`, and a client; resolves once ready. */
async function start(dir: string, state: string, deps: { tokenCounter?: TokenCounter; logger?: Logger; now?: () => number; idleReleaseMs?: number } = {}): Promise<{ daemon: Daemon; c: ContextdClient }> {
  const memory = deps.idleReleaseMs !== undefined ? { memory: { idleReleaseMs: deps.idleReleaseMs } } : {};
  const options = resolveDaemonOptions({}, { watch: [join(dir, 'sessions')], socket: join(dir, `${state}.sock`), state: join(dir, state), budgetTokens: 1_000_000, ...memory });
  const daemon = new Daemon(options, { logger: deps.logger ?? pino({ level: 'silent' }), ...(deps.tokenCounter ? { tokenCounter: deps.tokenCounter } : {}), ...(deps.now ? { now: deps.now } : {}) });
  await daemon.start();
  const c = new ContextdClient({ socketPath: options.socketPath, clientInfo: { name: 'test', version: '1' }, reconnect: false });
  await c.connect();
  const r = { daemon, c };
  running.push(r);
  return r;
}

async function rows(c: ContextdClient): Promise<Map<string, Row>> {
  const status = await c.status();
  return new Map((status.sessions as unknown as Row[]).map((r) => [basename(r.file, '.jsonl'), r]));
}

/** What a fresh daemon (new state, the real tokenizer) reads from the same files. */
async function freshRead(dir: string): Promise<Map<string, Row>> {
  const fresh = await start(dir, 'fresh-state');
  return rows(fresh.c);
}

/** A logger whose NDJSON lines are kept (parsed); `onLine` may throw, as a failing log stream does. */
function recordingLogger(onLine: (l: Record<string, unknown>) => void = () => undefined): { logger: Logger; logs: Record<string, unknown>[] } {
  const logs: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'debug' },
    {
      write(s: string) {
        const l = JSON.parse(s) as Record<string, unknown>;
        logs.push(l);
        onLine(l);
      },
    },
  );
  return { logger, logs };
}

describe('transcript lines that could not be applied', () => {
  it('a batch whose apply throws: status shows the failure, other sessions go on, and once a rebuild succeeds every line is in the model', async () => {
    const dir = tempDir();
    const a = join(dir, 'sessions', 'a.jsonl');
    const b = join(dir, 'sessions', 'b.jsonl');
    writeFileSync(a, lines('alpha-start', 3));
    writeFileSync(b, lines('beta-start', 3));
    // Injected fault: the real tokenizer, except that while `down` it throws on the new lines of
    // session a (texts marked "alpha-new"), as tiktoken's load does under EMFILE.
    let down = false;
    const counter = failingCounter(() => down, 'alpha-new');
    const { logger, logs } = recordingLogger();
    const { c } = await start(dir, 'state', { tokenCounter: counter, logger });
    const before = await rows(c);
    expect(before.get('a')?.tokens).toBeGreaterThan(0);

    down = true;
    appendFileSync(a, lines('alpha-new-1', 2));
    const failing = await until('session a reported failed', async () => {
      const r = (await rows(c)).get('a');
      return r?.failure ? r : undefined;
    });
    expect(failing.failure?.code).toBe('INGEST_FAILED');
    expect(failing.failure?.message).toContain('EMFILE');
    expect(failing.inMemory).toBe(false);
    const failedLog = logs.find((l) => l['msg'] === 'transcript lines could not be applied: the session model is rebuilt from its transcript');
    expect(failedLog).toMatchObject({ level: 50, code: 'INGEST_FAILED', sessionId: failing.sessionId });
    // A request for its model gets a coded error (no stack), not a model short of its transcript.
    const asked = await c.headroom(failing.sessionId).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(asked).toBeInstanceOf(RpcError);
    expect((asked as RpcError).code).toBe(RpcErrorCode.UNAVAILABLE);
    expect((asked as RpcError).message).toContain('could not be applied');

    // Another session goes on meanwhile.
    appendFileSync(b, lines('beta-more', 2));
    const bGrew = await until('session b grown', async () => {
      const r = (await rows(c)).get('b');
      return r && r.tokens > (before.get('b')?.tokens ?? 0) ? r : undefined;
    });
    expect(bGrew.failure).toBeNull();
    expect((await c.headroom(bGrew.sessionId)).tokens).toBe(bGrew.tokens);

    // Still down: the next append tries the rebuild again, which fails again; the failure stays.
    const notRebuilt = (): number => logs.filter((l) => l['msg'] === 'released session not rebuilt; retried on its next append or request' && l['sessionId'] === failing.sessionId).length;
    const tries = notRebuilt();
    appendFileSync(a, lines('alpha-new-2', 1));
    await until('a second rebuild tried', async () => Promise.resolve(notRebuilt() > tries ? true : undefined));
    expect((await rows(c)).get('a')?.failure?.code).toBe('INGEST_FAILED');

    // Back up: the next append rebuilds it from the transcript, every line in it.
    down = false;
    appendFileSync(a, lines('alpha-after', 1));
    const recovered = await until('session a rebuilt', async () => {
      const r = (await rows(c)).get('a');
      return r && r.failure === null && r.inMemory ? r : undefined;
    });
    const final = await rows(c);
    const fresh = await freshRead(dir);
    expect(recovered.tokens).toBe(fresh.get('a')?.tokens);
    expect(final.get('a')?.sections).toBe(fresh.get('a')?.sections);
    expect(final.get('b')?.tokens).toBe(fresh.get('b')?.tokens);
    expect(recovered.tokens).toBeGreaterThan(before.get('a')?.tokens ?? 0);
  });

  it('lines appended while released whose apply throws as the rebuild applies them: the failure is kept, not the model short of them', async () => {
    const dir = tempDir();
    const a = join(dir, 'sessions', 'a.jsonl');
    writeFileSync(a, lines('alpha-start', 3));
    // Injected fault as above: the tokenizer throws on the texts marked "alpha-new" while `down`.
    let down = false;
    const counter = failingCounter(() => down, 'alpha-new');
    // The session is released by the idle release (its clock moved past memory.idleReleaseMs), so
    // the next lines wait for its rebuild and are applied by it, after the transcript's.
    const clock = { t: 1_000_000 };
    const { c } = await start(dir, 'state', { tokenCounter: counter, now: () => clock.t, idleReleaseMs: 1_000 });
    const before = await rows(c);
    expect(before.get('a')?.tokens).toBeGreaterThan(0);
    clock.t += 5_000;
    await until('session a released', async () => ((await rows(c)).get('a')?.inMemory === false ? true : undefined));

    down = true;
    appendFileSync(a, lines('alpha-new-1', 2));
    const failing = await until('session a reported failed', async () => {
      const r = (await rows(c)).get('a');
      return r?.failure ? r : r?.inMemory ? 'rebuilt without reporting the failure' : undefined;
    });
    expect(failing).not.toBe('rebuilt without reporting the failure');

    down = false;
    appendFileSync(a, lines('alpha-after', 1));
    const recovered = await until('session a rebuilt', async () => {
      const r = (await rows(c)).get('a');
      return r && r.failure === null && r.inMemory && r.tokens > (before.get('a')?.tokens ?? 0) ? r : undefined;
    });
    const fresh = await freshRead(dir);
    expect(recovered.tokens).toBe(fresh.get('a')?.tokens);
    expect(recovered.sections).toBe(fresh.get('a')?.sections);
  });

  it('a batch the session manager could not take (it threw as the session opened): the lines reach the model without another append', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'sessions', 'a.jsonl'), lines('alpha', 2));
    // Injected fault: the log stream throws once, on the "session opened" line of c (after
    // the session is registered, before its batch is queued), so SessionManager.enqueue throws.
    let armed = true;
    const { logger, logs } = recordingLogger((l) => {
      if (armed && l['msg'] === 'session opened' && String(l['file']).endsWith('c.jsonl')) {
        armed = false;
        throw new Error('EIO: i/o error, write');
      }
    });
    const { c } = await start(dir, 'state', { logger });
    writeFileSync(join(dir, 'sessions', 'c.jsonl'), lines('gamma', 4));
    const opened = await until('session c with tokens', async () => {
      const r = (await rows(c)).get('c');
      return r && r.tokens > 0 && r.inMemory && r.failure === null ? r : undefined;
    }).catch(() => undefined);
    expect(armed).toBe(false); // the fault did fire
    const fresh = await freshRead(dir);
    expect(opened?.tokens).toBe(fresh.get('c')?.tokens);
    expect(opened?.sections).toBe(fresh.get('c')?.sections);
    expect(logs.some((l) => l['msg'] === 'transcript lines could not be applied: the session model is rebuilt from its transcript' && l['code'] === 'INGEST_FAILED')).toBe(true);
  });
});

/**
 * Issue 12, replayed against the spawned daemon: each attack from outside that once broke it.
 * Real processes (prlimit, setpriv, sh umask), real FIFOs, real sockets, real SQLite files.
 */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ContextdClient, type WirePlan } from '../../src/ipc/client.js';
import { demoTranscript } from '../../src/demo/transcript.js';
import { e2eScope, type DaemonDir, type SpawnedDaemon, subscribeWhenSeen } from './spawn.js';

const scope = e2eScope();

const isRoot = process.getuid?.() === 0;
const NOBODY = 65534;

function tempDir(): DaemonDir & { config: string } {
  const d = scope.tempDir('hard');
  return { ...d, config: join(d.dir, 'config.json') };
}

const startDaemon = (args: string[], opts: { prefix?: string[]; waitRunning?: boolean } = {}): Promise<SpawnedDaemon> => scope.daemon(args, {}, opts);
const client = (socket: string): Promise<ContextdClient> => scope.client(socket);

function nextPlan(c: ContextdClient, timeoutMs: number): Promise<WirePlan> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no compaction.proposed in ${timeoutMs} ms`)), timeoutMs);
    c.once('compaction.proposed', (p: WirePlan) => {
      clearTimeout(timer);
      resolve(p);
    });
  });
}

/** One raw connection: send lines, collect what comes back until the server closes. */
function rawConnection(socket: string): { sock: Socket; received: () => string; closed: Promise<void> } {
  const sock = connect(socket);
  let buf = '';
  sock.on('data', (d: Buffer) => (buf += d.toString()));
  sock.on('error', () => undefined);
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  return { sock, received: () => buf, closed };
}

const lines = (rounds: number, variant = 'a') => demoTranscript({ rounds, variant }).map((l) => JSON.stringify(l));

function logsAbout(d: SpawnedDaemon, file: string, level: string) {
  return d.logs.filter((l) => l.level === level && l['file'] === file);
}

describe('hardening: the attacks of issue 12, replayed', () => {
  it('1. FIFOs in a watched folder are skipped once each; ingest goes on; SIGTERM exits cleanly', async () => {
    const t = tempDir();
    const fifos = [0, 1, 2, 3].map((i) => join(t.watch, `p${i}.jsonl`));
    for (const f of fifos) execFileSync('mkfifo', [f]);
    const ok = join(t.watch, 'ok.jsonl');
    writeFileSync(ok, `${lines(1)[0]}\n`);
    const d = await startDaemon(['--watch', t.watch, '--socket', t.socket, '--state', t.state]);
    await d.waitForLog((l) => l.msg === 'session opened' && l['file'] === ok, 15_000, 'the regular file ingested');
    appendFileSync(ok, `${lines(2)[1]}\n`);
    const c = await client(t.socket);
    for (let i = 0; (await c.headroom('ok')).sections < 2; i++) {
      if (i > 300) throw new Error('the appended line was not ingested');
      await new Promise((r) => setTimeout(r, 50));
    }
    for (const f of fifos) expect(logsAbout(d, f, 'warn').map((l) => l.msg)).toEqual(['skipping path: not read']);
    d.proc.kill('SIGTERM');
    // A hang check, not a speed assertion: it used to be still running after 15 s.
    const exit = await Promise.race([d.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 20_000))]);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(existsSync(t.socket)).toBe(false);
  });

  it('2. a subscriber arriving after an advisory plan gets it at once, not after the advisory interval', async () => {
    const t = tempDir();
    const file = join(t.watch, 'late.jsonl');
    writeFileSync(file, `${lines(14).join('\n')}\n`);
    const d = await startDaemon(['--watch', t.watch, '--socket', t.socket, '--state', t.state, '--budget', '24000']);
    await d.waitForLog((l) => l.msg === 'compaction planned' && l['advisory'] === true, 20_000, 'an advisory plan');
    const c = await client(t.socket);
    const pushed = nextPlan(c, 10_000); // the advisory interval is 60 s: this would time out before the fix
    const sessionId = await subscribeWhenSeen(c, file);
    const plan = await pushed;
    expect(plan.sessionId).toBe(sessionId);
    expect(plan.edits.length).toBeGreaterThan(0);
    await c.ack({ planId: plan.planId, applied: true });
  });

  it('6. a pre-existing 0755 state folder and umask 000: folder 0700, database, WAL and SHM 0600', async () => {
    const t = tempDir();
    mkdirSync(t.state, { mode: 0o755 });
    chmodSync(t.state, 0o755);
    const file = join(t.watch, 'perm.jsonl');
    writeFileSync(file, `${lines(14).join('\n')}\n`);
    const d = await startDaemon(['--watch', t.watch, '--socket', t.socket, '--state', t.state, '--budget', '24000'], { prefix: ['sh', '-c', 'umask 000; exec "$0" "$@"'] });
    await d.waitForLog((l) => l.msg === 'compaction planned', 20_000, 'a plan (so the WAL is written)');
    expect(d.logs.some((l) => l.msg === 'state folder was readable by others: made private' && l['previousMode'] === '755')).toBe(true);
    expect(statSync(t.state).mode & 0o777).toBe(0o700);
    for (const f of ['contextd.db', 'contextd.db-wal', 'contextd.db-shm']) expect({ f, mode: statSync(join(t.state, f)).mode & 0o777 }).toEqual({ f, mode: 0o600 });
    d.proc.kill('SIGTERM');
    await d.exited;
  });

  it.skipIf(!isRoot)('6. a state folder owned by another user is refused with a clear message (needs root to chown; skipped otherwise)', async () => {
    const t = tempDir();
    mkdirSync(t.state, { mode: 0o700 });
    chownSync(t.state, NOBODY, NOBODY);
    const d = await startDaemon(['--watch', t.watch, '--socket', t.socket, '--state', t.state], { waitRunning: false });
    const exit = await d.exited;
    expect(exit.code).toBe(1);
    expect(d.logs.map((l) => `${l.msg} ${String(l['err'] ?? '')}`).join('\n')).toMatch(/belongs to uid 65534/);
  });

  it('7. SIGTERM while session.end harvests: the reply is delivered, the harvest committed, then a clean exit', async () => {
    const t = tempDir();
    const file = join(t.watch, 'ending.jsonl');
    writeFileSync(file, `${lines(40).join('\n')}\n`);
    const d = await startDaemon(['--watch', t.watch, '--socket', t.socket, '--state', t.state, '--budget', '400000']);
    const c = await client(t.socket);
    const sessionId = await subscribeWhenSeen(c, file);
    const ended = c.endSession(sessionId, 'success');
    await d.waitForLog((l) => l.msg === 'harvest started' && l['sessionId'] === sessionId, 15_000, 'the harvest under way');
    d.proc.kill('SIGTERM');
    const reply = await ended; // used to be EOF
    expect(typeof reply.harvested).toBe('number');
    expect(await d.exited).toEqual({ code: 0, signal: null });
    const db = new Database(join(t.state, 'contextd.db'), { readonly: true });
    scope.defer(() => void db.close());
    expect(db.prepare('SELECT COUNT(*) AS n FROM harvested_sessions WHERE session_id = ?').get(sessionId)).toEqual({ n: 1 });
  });

  it('8. at a 256-descriptor limit, 300 clients get a clear error past maxClients and ingest keeps working', async () => {
    const t = tempDir();
    const file = join(t.watch, 'busy.jsonl');
    writeFileSync(file, `${lines(1)[0]}\n`);
    writeFileSync(t.config, JSON.stringify({ maxClients: 100, partialLineTimeoutMs: 2_000 }));
    const d = await startDaemon(['--config', t.config, '--watch', t.watch, '--socket', t.socket, '--state', t.state], { prefix: ['prlimit', '--nofile=256:256', '--'] });
    await d.waitForLog((l) => l.msg === 'session opened' && l['file'] === file, 15_000, 'first session');
    // 300 clients, connected 25 at a time so the kernel's listen backlog (somaxconn) is not what
    // turns them away: the daemon's own limit is under test.
    const conns: ReturnType<typeof rawConnection>[] = [];
    scope.defer(() => conns.forEach((c) => c.sock.destroy()));
    for (let i = 0; i < 300; i += 25) {
      const batch = Array.from({ length: 25 }, () => rawConnection(t.socket));
      conns.push(...batch);
      await Promise.all(batch.map((c) => new Promise<void>((r) => { c.sock.once('connect', () => r()); c.sock.once('error', () => r()); })));
    }
    // Those over the limit are told why and closed: wait (bounded) until the daemon has answered
    // them, however slowly a loaded machine accepts 300 connections.
    const refusedNow = (): typeof conns => conns.filter((c) => c.received().includes('"code":-32008'));
    for (let waited = 0; refusedNow().length < 200 && waited < 20_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
    const refused = refusedNow();
    expect(refused.length).toBeGreaterThanOrEqual(200);
    expect(JSON.parse(refused[0]?.received().trim() ?? '{}')).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32008 } });
    // Ingest goes on: a new transcript is read while the connections are held.
    const fresh = join(t.watch, 'fresh.jsonl');
    writeFileSync(fresh, `${lines(1, 'b')[0]}\n`);
    await d.waitForLog((l) => l.msg === 'session opened' && l['file'] === fresh, 15_000, 'a new session while 300 clients attempt');
    // A half-sent line is closed after partialLineTimeoutMs with -32009.
    const held = conns.find((c) => !c.received().includes('-32008'));
    held?.sock.write('{"jsonrpc":"2.0","id":1,"method":"daemon.st');
    await held?.closed;
    expect(held?.received()).toContain('"code":-32009');
    expect(d.logs.some((l) => JSON.stringify(l).includes('EMFILE'))).toBe(false);
    d.proc.kill('SIGTERM');
    expect(await d.exited).toEqual({ code: 0, signal: null });
  });

  it('10. a transcript unreadable at start is logged once and read when it becomes readable', async () => {
    // As root, chmod does not stop reads: the daemon runs as "nobody" through setpriv. As
    // another user, chmod 000 is enough and the daemon runs as that user.
    const t = tempDir();
    const prefix = isRoot ? ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--'] : [];
    if (isRoot) {
      for (const p of [t.dir, t.watch]) chownSync(p, NOBODY, NOBODY);
      chmodSync(t.dir, 0o755);
    }
    const file = join(t.watch, 'locked.jsonl');
    writeFileSync(file, `${lines(1)[0]}\n`);
    chmodSync(file, 0o000);
    const d = await startDaemon(['--watch', t.watch, '--socket', t.socket, '--state', t.state], { prefix });
    await d.waitForLog((l) => l.msg === 'transcript cannot be opened; retrying until it can' && l['file'] === file, 15_000, 'the unreadable file reported');
    await new Promise((r) => setTimeout(r, 3_500)); // two retries (1 s, 2 s)
    chmodSync(file, 0o644);
    await d.waitForLog((l) => l.msg === 'session opened' && l['file'] === file, 20_000, 'the file read once readable');
    expect(logsAbout(d, file, 'warn').map((l) => l.msg)).toEqual(['transcript cannot be opened; retrying until it can']);
    expect(d.logs.some((l) => l.msg === 'transcript readable now' && l['file'] === file)).toBe(true);
  });

  it('11. with socketGroup, a client sees only the sessions it subscribed to by transcript path', async () => {
    const t = tempDir();
    const a = join(t.watch, 'a.jsonl');
    const b = join(t.watch, 'b.jsonl');
    writeFileSync(a, `${lines(2, 'a').join('\n')}\n`);
    writeFileSync(b, `${lines(2, 'b').join('\n')}\n`);
    writeFileSync(t.config, JSON.stringify({ socketGroup: process.getgid?.() ?? 0 }));
    await startDaemon(['--config', t.config, '--watch', t.watch, '--socket', t.socket, '--state', t.state]);
    const alice = await client(t.socket);
    const bob = await client(t.socket);
    const idA = await subscribeWhenSeen(alice, a);
    await subscribeWhenSeen(bob, b);
    expect((await alice.status()).sessions.map((s) => s.sessionId)).toEqual([idA]);
    expect((await bob.status()).sessions.map((s) => s.sessionId)).not.toContain(idA);
    await expect(bob.headroom(idA)).rejects.toMatchObject({ code: -32001 });
    await expect(bob.recall(idA, 'h_0000000000000000')).rejects.toMatchObject({ code: -32001 });
    await expect(bob.subscribe({ sessionId: idA })).rejects.toMatchObject({ code: -32001 });
    await expect(bob.subscribe({})).rejects.toMatchObject({ code: -32001 });
  });
});

describe('connection limits reloaded with SIGHUP', () => {
  it('a new clientIdleTimeoutMs applies at once: to a client connected before the reload and to one after', async () => {
    const d = tempDir();
    writeFileSync(d.config, JSON.stringify({ clientIdleTimeoutMs: 600_000 }));
    const daemon = await startDaemon(['--config', d.config, '--watch', d.watch, '--socket', d.socket, '--state', d.state]);
    const before = rawConnection(d.socket);
    await new Promise<void>((r) => before.sock.once('connect', () => r()));
    writeFileSync(d.config, JSON.stringify({ clientIdleTimeoutMs: 300, partialLineTimeoutMs: 200, maxClients: 64 }));
    daemon.proc.kill('SIGHUP');
    const reloaded = await daemon.waitForLog((l) => l.msg === 'configuration reloaded');
    expect(reloaded['restartNeeded']).toEqual([]);
    // the client of before the reload, idle since: closed with -32009 naming the new limit
    await before.closed;
    expect(before.received()).toContain('-32009');
    expect(before.received()).toContain('idleTimeoutMs');
    const after = rawConnection(d.socket);
    await after.closed;
    expect(after.received()).toContain('idleTimeoutMs');
    // the partial-line timeout too
    const partial = rawConnection(d.socket);
    partial.sock.write('{"jsonrpc":"2.0","id":1,');
    await partial.closed;
    expect(partial.received()).toContain('partialLineTimeoutMs');
    expect(daemon.proc.exitCode).toBeNull();
  });
});

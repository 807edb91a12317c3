/**
 * The tailer against hostile watched folders (issue 12): FIFOs, sockets, symlinks out of the
 * roots, new folders filled in a burst, same-named files in two folders, garbage floods.
 * Real files, a real FIFO (mkfifo), a real listening Unix socket, real symlinks.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Tailer, type TailerOptions } from '../../src/ingest/index.js';
import { chatLine, pause, pollUntil, Recorder } from './tailer-helpers.js';

let dir: string;
let outside: string;
const tailers: Tailer[] = [];
const servers: Server[] = [];

interface LogLine {
  msg: string;
  [k: string]: unknown;
}

function startTailer(paths: string[], options: Partial<TailerOptions> = {}) {
  const logs: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) logs.push(JSON.parse(l) as LogLine);
      cb();
    },
  });
  const tailer = new Tailer({ paths, recheckMs: 40, logger: pino({ level: 'debug' }, sink), ...options });
  tailers.push(tailer);
  const rec = new Recorder(tailer);
  return { tailer, rec, logs, started: tailer.start() };
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'contextd-hostile-'));
  outside = mkdtempSync(join(tmpdir(), 'contextd-outside-'));
});
afterEach(async () => {
  await Promise.all(tailers.splice(0).map((t) => t.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  rmSync(dir, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

const sessionIds = (rec: Recorder) => rec.of('session').map((s) => s.sessionId).sort();

describe('Tailer in hostile folders', () => {
  it('skips FIFOs and sockets with one warning each, never blocks, and keeps reading regular files', async () => {
    for (let i = 0; i < 4; i++) execFileSync('mkfifo', [join(dir, `p${i}.jsonl`)]);
    const sock = createServer();
    servers.push(sock);
    await new Promise<void>((r) => sock.listen(join(dir, 's.jsonl'), r));
    writeFileSync(join(dir, 'ok.jsonl'), chatLine('user', 'hello'));
    const { rec, logs, started, tailer } = startTailer([dir]);
    await started;
    await rec.until(() => rec.model(join(dir, 'ok.jsonl')).length === 1, 'the regular file');
    // A FIFO created while running, and writes to the regular file after it.
    execFileSync('mkfifo', [join(dir, 'late.jsonl')]);
    await pause(200);
    appendFileSync(join(dir, 'ok.jsonl'), chatLine('assistant', 'still here'));
    await rec.until(() => rec.model(join(dir, 'ok.jsonl')).length === 2, 'ingest after the FIFOs');
    const skipped = logs.filter((l) => l.msg === 'skipping path: not read');
    expect(skipped.map((l) => l['file']).sort()).toEqual(['late', 'p0', 'p1', 'p2', 'p3', 's'].map((n) => join(dir, `${n}.jsonl`)));
    expect(skipped.filter((l) => String(l['reason']).includes('FIFO'))).toHaveLength(5);
    expect(skipped.find((l) => l['file'] === join(dir, 's.jsonl'))?.['reason']).toMatch(/socket/);
    // close() does not wait on a FIFO that nobody writes to.
    await tailer.close();
    expect(tailer.state).toBe('closed');
  });

  it('reads every file of a burst of 200 written right after their folder is created', async () => {
    const { rec, started } = startTailer([dir]);
    await started;
    const sub = join(dir, 'burst');
    mkdirSync(sub);
    for (let i = 0; i < 200; i++) writeFileSync(join(sub, `f${i}.jsonl`), chatLine('user', `file ${i}`));
    await rec.until(() => rec.of('session').length === 200, '200 sessions', 20_000);
    expect(new Set(rec.of('session').map((s) => s.file)).size).toBe(200);
  });

  it('gives same-named files in two folders different session ids; agent ids come from the file name', async () => {
    mkdirSync(join(dir, 'a'));
    mkdirSync(join(dir, 'b'));
    writeFileSync(join(dir, 'a', 'x.jsonl'), chatLine('user', 'in a'));
    writeFileSync(join(dir, 'b', 'x.jsonl'), chatLine('user', 'in b'));
    writeFileSync(join(dir, 'top.jsonl'), chatLine('user', 'at the root'));
    const uuid = '0d3a8e6f-290f-4105-a327-a2496e5e2a83';
    mkdirSync(join(dir, '-home-u-proj'));
    writeFileSync(join(dir, '-home-u-proj', `${uuid}.jsonl`), chatLine('user', 'claude-style name'));
    writeFileSync(join(dir, 'a', `rollout-2026-01-02T03-04-05-${uuid.replace('0d3a', '1d3a')}.jsonl`), chatLine('user', 'codex-style name'));
    const { rec, started } = startTailer([dir]);
    await started;
    await rec.until(() => rec.of('session').length === 5, '5 sessions');
    expect(sessionIds(rec)).toEqual([uuid, uuid.replace('0d3a', '1d3a'), 'a/x', 'b/x', 'top'].sort());
    // Stable across restarts: a second tailer gives the same ids.
    await tailers[0]?.close();
    const again = startTailer([dir]);
    await again.started;
    await again.rec.until(() => again.rec.of('session').length === 5, '5 sessions again');
    expect(sessionIds(again.rec)).toEqual(sessionIds(rec));
  });

  it('does not follow symlinks out of the watch roots unless followSymlinks is set', async () => {
    writeFileSync(join(outside, 'secret.jsonl'), chatLine('user', 'outside'));
    mkdirSync(join(outside, 'deep'));
    writeFileSync(join(outside, 'deep', 'd.jsonl'), chatLine('user', 'outside dir'));
    symlinkSync(join(outside, 'secret.jsonl'), join(dir, 'link.jsonl'));
    symlinkSync(join(outside, 'deep'), join(dir, 'linkdir'));
    writeFileSync(join(dir, 'ok.jsonl'), chatLine('user', 'inside'));
    symlinkSync(join(dir, 'ok.jsonl'), join(dir, 'inner-link.jsonl'));
    const { rec, logs, started } = startTailer([dir]);
    await started;
    await rec.until(() => rec.of('session').length >= 2, 'the inside files');
    await pause(300);
    expect(rec.of('session').map((s) => s.file).sort()).toEqual([join(dir, 'inner-link.jsonl'), join(dir, 'ok.jsonl')]);
    expect(logs.filter((l) => l.msg === 'skipping path: not read').map((l) => l['file'])).toEqual([join(dir, 'link.jsonl')]);
    await tailers[0]?.close();

    const follow = startTailer([dir], { followSymlinks: true });
    await follow.started;
    await follow.rec.until(() => follow.rec.of('session').length === 4, 'all four with followSymlinks');
  });

  it('rate-limits skipped-line warnings per file, with a count of the repeats', async () => {
    const file = join(dir, 'junk.jsonl');
    writeFileSync(file, chatLine('user', 'first'));
    const { rec, logs, started, tailer } = startTailer([dir], { warnIntervalMs: 60_000 });
    let lineErrors = 0;
    let after = false;
    tailer.on('line-error', () => lineErrors++);
    tailer.on('events', (b) => (after ||= b.events.some((e) => e.type === 'message' && e.message.text === 'after the garbage')));
    await started;
    await rec.until(() => rec.model(file).length === 1, 'first line');
    let garbage = '';
    while (garbage.length < 1024 * 1024) garbage += `not json ${garbage.length} {{{\n`;
    appendFileSync(file, garbage + chatLine('user', 'after the garbage'));
    // Polled (not rec.until): re-checking a predicate on each of ~30k events would be quadratic.
    await pollUntil(() => after, 'the line after the garbage', 20_000);
    expect(lineErrors).toBeGreaterThan(10_000);
    const warned = logs.filter((l) => l.msg === 'transcript line skipped');
    expect(warned).toHaveLength(1);
    await tailers[0]?.close(); // ends the window: the count is logged
    const repeated = logs.filter((l) => l.msg === 'transcript line skipped (repeated)');
    expect(repeated).toHaveLength(1);
    expect(repeated[0]?.['repeated']).toBe(lineErrors - 1);
  });
});

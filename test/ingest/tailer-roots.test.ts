/** Watch roots that do not exist yet, appear with their parents in one go, or vanish and come back. */
import { Writable } from 'node:stream';
import { appendFileSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { pino } from 'pino';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Tailer } from '../../src/ingest/index.js';
import { chatLine, pause, pollUntil, Recorder } from './tailer-helpers.js';

let dir: string;
const tailers: Tailer[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'contextd-roots-'));
});
afterEach(async () => {
  await Promise.all(tailers.splice(0).map((t) => t.close()));
  rmSync(dir, { recursive: true, force: true });
});

/** The tailer's log lines, kept in memory (debug level). */
function memoryLogger(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}

async function started(root: string, logger?: pino.Logger): Promise<Recorder> {
  const tailer = new Tailer({ paths: [root], recheckMs: 40, ...(logger ? { logger } : {}) });
  tailers.push(tailer);
  const rec = new Recorder(tailer);
  await tailer.start();
  return rec;
}

const texts = (rec: Recorder, file: string): string[] => rec.model(file).map((m) => m.text);

describe('Tailer watch roots', () => {
  it('reads a root created with its parents after start (mkdir -p)', async () => {
    const root = join(dir, 'a', 'b', 'c');
    const rec = await started(root);
    mkdirSync(root, { recursive: true });
    const file = join(root, 'late.jsonl');
    appendFileSync(file, chatLine('user', 'hello from a late folder'));
    await rec.until(() => texts(rec, file).length === 1, 'the message of a file in a root created after start');
    expect(texts(rec, file)).toEqual(['hello from a late folder']);
  });

  it('reads a root created one level at a time', async () => {
    const root = join(dir, 'x', 'y');
    const rec = await started(root);
    mkdirSync(join(dir, 'x'));
    await new Promise((r) => setTimeout(r, 200));
    mkdirSync(root);
    const file = join(root, 'step.jsonl');
    appendFileSync(file, chatLine('user', 'stepwise'));
    await rec.until(() => texts(rec, file).length === 1, 'the message of a file in a root created level by level');
  });

  it('picks a root up again after it is removed and created again', async () => {
    const root = join(dir, 'sessions');
    mkdirSync(root);
    const rec = await started(root);
    const first = join(root, 'one.jsonl');
    appendFileSync(first, chatLine('user', 'before removal'));
    await rec.until(() => texts(rec, first).length === 1, 'the first file');
    rmSync(root, { recursive: true });
    await rec.until(() => rec.of('removed', first).length === 1, 'the removal of the first file');
    mkdirSync(root);
    const second = join(root, 'two.jsonl');
    appendFileSync(second, chatLine('user', 'after it came back'));
    await rec.until(() => texts(rec, second).length === 1, 'the message of a file in the re-created root');
    appendFileSync(second, chatLine('assistant', 'and appended'));
    await rec.until(() => texts(rec, second).length === 2, 'an append to that file');
  });

  it('lists a root that appears after start once per rescan, not once for each report of it', async () => {
    const root = join(dir, 'late');
    const { logger, lines } = memoryLogger();
    const rec = await started(root, logger);
    mkdirSync(root);
    const file = join(root, 'late.jsonl');
    appendFileSync(file, chatLine('user', 'listed once'));
    await rec.until(() => texts(rec, file).length === 1, 'the file of the late root');
    const listed = (): number => lines.filter((l) => l['msg'] === 'folder listed' && l['dir'] === root).length;
    await pollUntil(() => listed() >= 3, 'the three rescans of a new folder (0, 150 and 1000 ms)');
    await pause(1_500);
    expect(listed()).toBe(3);
  });

  it('reads a root that appears as a symlink, and again after the link is re-pointed in place', async () => {
    const a = join(dir, 'target-a');
    const b = join(dir, 'target-b');
    mkdirSync(a);
    mkdirSync(b);
    const inA = join(a, 'first.jsonl');
    appendFileSync(inA, chatLine('user', 'written before the link existed'));
    const root = join(dir, 'link');
    const rec = await started(root);
    symlinkSync(a, root);
    const viaA = join(root, 'first.jsonl');
    await rec.until(() => texts(rec, viaA).length === 1, 'the file already in the target of a root that appeared as a symlink');
    expect(rec.of('line-error')).toEqual([]);
    // re-point the link atomically (rename over it): the root never vanishes
    symlinkSync(b, join(dir, 'link.new'));
    renameSync(join(dir, 'link.new'), root);
    const viaB = join(root, 'second.jsonl');
    appendFileSync(join(b, 'second.jsonl'), chatLine('user', 'written after the link was re-pointed'));
    await rec.until(() => texts(rec, viaB).length === 1, 'a file of the new target');
  });
});

/** Watch roots that do not exist yet, appear with their parents in one go, or vanish and come back. */
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Tailer } from '../../src/ingest/index.js';
import { chatLine, Recorder } from './tailer-helpers.js';

let dir: string;
const tailers: Tailer[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'contextd-roots-'));
});
afterEach(async () => {
  await Promise.all(tailers.splice(0).map((t) => t.close()));
  rmSync(dir, { recursive: true, force: true });
});

async function started(root: string): Promise<Recorder> {
  const tailer = new Tailer({ paths: [root], recheckMs: 40 });
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
});

/**
 * The tailer's descriptor bound (`maxOpenFiles`) holds while many transcripts are read at once,
 * not only between reads: a first scan and a burst of new files open at most that many
 * descriptors at a time, and every file is read. Real files; the descriptors are counted in
 * /proc/self/fd as each file's lines are delivered.
 */
import { mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DescriptorSlots } from '../../src/ingest/descriptor-slots.js';
import { Tailer } from '../../src/ingest/index.js';
import { chatLine, Recorder } from './tailer-helpers.js';

let dir: string;
const tailers: Tailer[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'contextd-fds-'));
});

afterEach(async () => {
  await Promise.all(tailers.splice(0).map((t) => t.close()));
  rmSync(dir, { recursive: true, force: true });
});

/** Descriptors this process holds on transcripts under `root` (not the folder listings). */
function openUnder(root: string): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(root) && target.endsWith('.jsonl')) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

/** A tailer whose every delivered batch records how many descriptors were open then. */
function countingTailer(maxOpenFiles: number): { tailer: Tailer; rec: Recorder; most: () => number } {
  const tailer = new Tailer({ paths: [dir], recheckMs: 20, maxOpenFiles });
  tailers.push(tailer);
  let most = 0;
  tailer.on('events', () => {
    most = Math.max(most, openUnder(dir), tailer.descriptors().open);
  });
  return { tailer, rec: new Recorder(tailer), most: () => most };
}

describe('tailer descriptor bound', () => {
  it('a first scan of 300 files holds at most maxOpenFiles descriptors and reads every file', async () => {
    for (let i = 0; i < 300; i++) writeFileSync(join(dir, `f${i}.jsonl`), chatLine('user', `file ${i}`));
    const { tailer, rec, most } = countingTailer(8);
    await tailer.start();
    expect(new Set(rec.of('events').map((e) => e.file)).size).toBe(300);
    expect(most()).toBeLessThanOrEqual(8);
    expect(openUnder(dir)).toBeLessThanOrEqual(8);
  });

  it('a burst of 300 new files while running holds at most maxOpenFiles descriptors and reads every file', async () => {
    const { tailer, rec, most } = countingTailer(8);
    await tailer.start();
    for (let i = 0; i < 300; i++) writeFileSync(join(dir, `b${i}.jsonl`), chatLine('user', `file ${i}`));
    await rec.until(() => new Set(rec.of('events').map((e) => e.file)).size === 300, '300 files read', 20_000);
    expect(most()).toBeLessThanOrEqual(8);
    expect(openUnder(dir)).toBeLessThanOrEqual(8);
    await tailer.close();
    expect(openUnder(dir)).toBe(0);
  });
});

describe('DescriptorSlots', () => {
  it('hands out max slots, reclaims an idle one for a waiter, and tells waiters false on close', async () => {
    let idle = 1;
    const slots: DescriptorSlots = new DescriptorSlots(2, () => {
      if (idle === 0) return false;
      idle--;
      queueMicrotask(() => slots.release()); // the idle descriptor closes, its slot comes back
      return true;
    });
    expect(slots.acquire()).toBe(true);
    expect(slots.acquire()).toBe(true);
    await expect(slots.acquire()).resolves.toBe(true); // served by the reclaimed slot
    expect(slots.inUse).toBe(2);
    const waiting = slots.acquire(); // nothing idle: waits
    expect(slots.waiters).toBe(1);
    slots.close();
    await expect(waiting).resolves.toBe(false);
  });
});

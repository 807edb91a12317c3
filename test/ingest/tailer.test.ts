import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { appendFile, open } from 'node:fs/promises';
import { createHook } from 'node:async_hooks';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isContextdError } from '../../src/util/errors.js';
import type { FSWatcher } from 'chokidar';
import { readTranscriptFile, Tailer, type TailerOptions } from '../../src/ingest/index.js';
import { generateTranscript } from '../fixtures/transcripts.js';
import { messages } from './helpers.js';
import { chatLine, pause, pollUntil, Recorder } from './tailer-helpers.js';

let dir: string;
const tailers: Tailer[] = [];

function startTailer(options: Partial<TailerOptions> = {}): { tailer: Tailer; rec: Recorder; started: Promise<void> } {
  const tailer = new Tailer({ paths: [dir], recheckMs: 40, ...options });
  tailers.push(tailer);
  const rec = new Recorder(tailer);
  return { tailer, rec, started: tailer.start() };
}

const texts = (rec: Recorder, file: string) => rec.model(file).map((m) => m.text);

/** The tailer's chokidar watcher (tests of what chokidar watches). */
const chokidarOf = (tailer: Tailer): FSWatcher => (tailer as unknown as { watcher: FSWatcher }).watcher;

/**
 * Moves a folder of 3,000 files (and the `transcripts` given, by name), built outside, into the
 * watched `dir` as `name`, and calls `meanwhile` `delay` ms after chokidar reports it: while
 * chokidar lists it for the first time, before it watches it (3,000 entries take that long).
 * Returns the folder's path.
 */
function moveInLargeFolder(watcher: FSWatcher, name: string, delay: number, meanwhile: (folder: string) => void, transcripts: Readonly<Record<string, string>> = {}): string {
  const stage = mkdtempSync(join(tmpdir(), 'contextd-stage-'));
  stages.push(stage);
  const src = join(stage, name);
  mkdirSync(src);
  for (let j = 0; j < 3000; j++) writeFileSync(join(src, `x${j}.txt`), 'x');
  for (const [file, body] of Object.entries(transcripts)) writeFileSync(join(src, file), body);
  const folder = join(dir, name);
  const onDir = (p: string) => {
    if (p !== folder) return;
    watcher.off('addDir', onDir);
    setTimeout(() => meanwhile(folder), delay);
  };
  watcher.on('addDir', onDir);
  renameSync(src, folder);
  return folder;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'contextd-'));
});
/** Folders outside the watched one that a test builds its content in (`moveInLargeFolder`). */
const stages: string[] = [];

afterEach(async () => {
  await Promise.all(tailers.splice(0).map((t) => t.close()));
  rmSync(dir, { recursive: true, force: true });
  for (const stage of stages.splice(0)) rmSync(stage, { recursive: true, force: true });
});

describe('Tailer', () => {
  it('reads a file created after start, written in many small pieces with lines split across writes', async () => {
    const { rec, started, tailer } = startTailer();
    await started;
    expect(tailer.state).toBe('running');
    expect(rec.of('ready')).toHaveLength(1);
    const file = join(dir, 'live-1.jsonl');
    const expected: string[] = [];
    let body = '';
    for (let i = 0; i < 40; i++) {
      const text = `message ${i} ${'é'.repeat(i % 5)}`;
      expected.push(text);
      body += chatLine(i % 2 === 0 ? 'user' : 'assistant', text);
    }
    const bytes = Buffer.from(body);
    // Irregular pieces: many cut mid-line and mid-UTF-8 sequence.
    let pos = 0;
    let step = 3;
    while (pos < bytes.length) {
      appendFileSync(file, bytes.subarray(pos, pos + step));
      pos += step;
      step = (step * 7 + 5) % 97 + 1;
      if (pos % 5 === 0) await pause(2);
    }
    await rec.until(() => rec.model(file).length === 40, '40 messages');
    expect(texts(rec, file)).toEqual(expected);
    expect(rec.of('session', file)).toEqual([{ file, sessionId: 'live-1', format: 'openai-chat' }]);
    // Batches tile the file: each starts where the previous ended, on line boundaries.
    const batches = rec.of('events', file);
    let at = 0;
    for (const b of batches) {
      expect(b.fromOffset).toBe(at);
      at = b.toOffset;
    }
    expect(at).toBe(bytes.length);
    const [st] = tailer.stats().filter((s) => s.file === file);
    expect(st).toMatchObject({ offset: bytes.length, readOffset: bytes.length, live: true, counts: { lines: 40, malformedLines: 0 } });
    expect(st?.inode).toBe(statSync(file).ino);
  });

  it('reads into a few reused buffers, never one per read, and keeps partial lines intact across reads', async () => {
    const { rec, started, tailer } = startTailer();
    await started;
    const files = Array.from({ length: 8 }, (_, i) => join(dir, `pool-${i}.jsonl`));
    const expected = files.map((_, i) => Array.from({ length: 30 }, (_, k) => `file ${i} message ${k} ${'ü'.repeat(k % 7)}`));
    // Every line written in two pieces with a pause between: the second read completes a line
    // whose start an earlier read left in the (reused) buffer.
    for (let k = 0; k < 30; k++) {
      for (const [i, file] of files.entries()) {
        const line = Buffer.from(chatLine(k % 2 === 0 ? 'user' : 'assistant', expected[i]?.[k] as string));
        appendFileSync(file, line.subarray(0, 20));
      }
      await pause(k % 3 === 0 ? 60 : 5);
      for (const [i, file] of files.entries()) {
        const line = Buffer.from(chatLine(k % 2 === 0 ? 'user' : 'assistant', expected[i]?.[k] as string));
        appendFileSync(file, line.subarray(20));
      }
      await pause(5);
    }
    await rec.until(() => files.every((f) => rec.model(f).length === 30), '30 messages in every file');
    for (const [i, file] of files.entries()) expect(texts(rec, file)).toEqual(expected[i]);
    expect(rec.of('reset')).toEqual([]);
    const batches = files.reduce((n, f) => n + rec.of('events', f).length, 0);
    expect(batches).toBeGreaterThan(50); // many reads…
    const { small, large } = tailer.readBuffers;
    expect(small.allocated).toBeGreaterThan(0);
    expect(small.allocated).toBeLessThanOrEqual(small.max); // …few buffers, all reused
    expect(large.allocated).toBe(0); // appends never take a large one
  });

  it('reads appends that follow each other within chokidar\'s 50 ms change throttle at once, not at the re-check', async () => {
    // The re-check is 10 minutes away: only the raw events can announce these appends in time.
    const { rec, started } = startTailer({ recheckMs: 600_000 });
    await started;
    const file = join(dir, 'quick.jsonl');
    writeFileSync(file, chatLine('user', 'first'));
    await rec.until(() => rec.model(file).length === 1, 'the first line');
    for (let i = 0; i < 5; i++) {
      // written as soon as the previous line was read: well within chokidar's throttle window
      appendFileSync(file, chatLine('assistant', `quick ${i}`));
      await rec.until(() => rec.model(file).length === i + 2, `append ${i}`, 5_000);
    }
    expect(texts(rec, file)).toEqual(['first', 'quick 0', 'quick 1', 'quick 2', 'quick 3', 'quick 4']);
  });

  it('does not list a folder again when a file in it grows (chokidar, patched: patches/chokidar+5.0.0.patch)', async () => {
    // 200 other transcripts beside the live one: unpatched, chokidar re-lists the folder on
    // every change event in it, one lstat per entry, so each append cost ~200 fs requests.
    // The root's parent is watched too (for the root to vanish and come back): a folder of the
    // test's own, not the tmp folder other processes write in.
    const root = join(dir, 'root');
    mkdirSync(root);
    for (let i = 0; i < 200; i++) writeFileSync(join(root, `other-${i}.jsonl`), chatLine('user', `other ${i}`));
    const file = join(root, 'busy.jsonl');
    writeFileSync(file, chatLine('user', 'first'));
    // every fs request made (promise and callback forms)
    let requests = 0;
    const hook = createHook({ init: (_id, type) => void (type.startsWith('FSREQ') && requests++) }).enable();
    try {
      const { rec, started } = startTailer({ paths: [root], recheckMs: 600_000 });
      await started;
      await rec.until(() => rec.model(file).length === 1, 'the first line');
      // Wait until the start's listings are over (no request for 500 ms), however slow the machine.
      const quiet = async (): Promise<void> => {
        let seen = -1;
        while (seen !== requests) {
          seen = requests;
          await pause(500);
        }
      };
      // The folder is listed once more at its first event after its watch started (what was
      // made between its first listing and its watch is found then): that append goes first.
      appendFileSync(file, chatLine('assistant', 'the first append'));
      await rec.until(() => rec.model(file).length === 2, 'the first append', 5_000);
      await quiet();
      requests = 0;
      for (let i = 0; i < 5; i++) {
        appendFileSync(file, chatLine('assistant', `append ${i}`));
        await rec.until(() => rec.model(file).length === i + 3, `append ${i}`, 5_000);
      }
      await quiet(); // a listing started by the appends is counted whole
      expect(texts(rec, file).slice(-1)).toEqual(['append 4']);
      // a few per append (stat, read, the descriptor's checks), never one per file in the folder
      expect(requests).toBeLessThan(100);
    } finally {
      hook.disable();
    }
  });

  it('watches a transcript written into a new folder while chokidar first lists it, from its first append on', async () => {
    // chokidar lists a new folder, then watches it: a file created in between gets no event.
    // Patched, the folder's first event after its watch started (the file's first change) must
    // still list it, as every event does unpatched, or the file is never watched and its
    // removal never seen.
    const { rec, started, tailer } = startTailer();
    await started;
    const watcher = chokidarOf(tailer);
    const files: string[] = [];
    for (const delay of [1, 5, 15]) {
      const folder = moveInLargeFolder(watcher, `p${delay}`, delay, (f) => writeFileSync(join(f, 't.jsonl'), chatLine('user', 'first')));
      const file = join(folder, 't.jsonl');
      files.push(file);
      await rec.until(() => rec.model(file).length === 1, `the first line of ${file}`, 20_000);
    }
    for (const f of files) appendFileSync(f, chatLine('assistant', 'second'));
    await rec.until(() => files.every((f) => rec.model(f).length === 2), 'every append', 20_000);
    // Watched now, by chokidar: a removal is reported. Unwatched, it never is.
    await pollUntil(() => files.every((f) => (watcher.getWatched()[join(f, '..')] ?? []).includes('t.jsonl')), 'every transcript watched', 20_000);
    for (const f of files) unlinkSync(f);
    await rec.until(() => files.every((f) => rec.of('removed', f).length === 1), 'every removal', 20_000);
  });

  it('watches a subfolder made while chokidar first lists a new folder, once anything in that folder changes', async () => {
    // As a subagent's transcript folder made right after its session's folder: no event of its
    // own, and chokidar finds it only by listing the folder again. Patched, the folder is still
    // listed at its first event after its watch started (here: the main transcript's append).
    const { rec, started, tailer } = startTailer();
    await started;
    const watcher = chokidarOf(tailer);
    for (const delay of [1, 5, 15]) {
      const makeSubfolder = (f: string) => {
        mkdirSync(join(f, 'sub'));
        writeFileSync(join(f, 'sub', 'agent.jsonl'), chatLine('user', 'agent first'));
      };
      const folder = moveInLargeFolder(watcher, `p${delay}`, delay, makeSubfolder, { 'main.jsonl': chatLine('user', 'main') });
      const main = join(folder, 'main.jsonl');
      const agent = join(folder, 'sub', 'agent.jsonl');
      await rec.until(() => rec.model(agent).length === 1 && rec.model(main).length === 1, `the first lines in ${folder}`, 20_000);
      // The main transcript grows, as a session does, until the folder's own watch (it
      // starts once chokidar's first listing of 3,000 entries is over) reports an append.
      let folderEvents = 0;
      const onRaw = (_e: string, _p: string, d: unknown) => void ((d as { watchedPath?: string } | undefined)?.watchedPath === folder && folderEvents++);
      watcher.on('raw', onRaw);
      for (let n = 2; folderEvents === 0; n++) {
        if (n > 300) throw new Error(`no event from ${folder}'s own watch after 300 appends`);
        appendFileSync(main, chatLine('assistant', `main ${n}`));
        await rec.until(() => rec.model(main).length === n, `main append ${n}`, 10_000);
        if (folderEvents === 0) await pause(100);
      }
      watcher.off('raw', onRaw);
      await pollUntil(() => (watcher.getWatched()[folder] ?? []).includes('sub'), `${folder}/sub watched`, 20_000);
      appendFileSync(agent, chatLine('assistant', 'agent second'));
      await rec.until(() => rec.model(agent).length === 2, 'the subagent append', 10_000);
    }
  });

  it('still sees files added to and removed from a watched folder', async () => {
    const { rec, started } = startTailer();
    await started;
    const a = join(dir, 'a.jsonl');
    writeFileSync(a, chatLine('user', 'a'));
    await rec.until(() => rec.model(a).length === 1, 'a');
    appendFileSync(a, chatLine('assistant', 'a2'));
    const b = join(dir, 'b.jsonl');
    writeFileSync(b, chatLine('user', 'b'));
    await rec.until(() => rec.model(b).length === 1 && rec.model(a).length === 2, 'b, and a grown');
    unlinkSync(b);
    await rec.until(() => rec.of('removed', b).length === 1, 'b removed');
  });

  it('never parses a partial last line early', async () => {
    const file = join(dir, 'partial.jsonl');
    writeFileSync(file, chatLine('user', 'one'));
    const { rec, started, tailer } = startTailer();
    await started;
    expect(texts(rec, file)).toEqual(['one']);
    const line = chatLine('assistant', 'two');
    appendFileSync(file, line.slice(0, 12));
    // The tailer has read the partial piece (its read offset covers it) but emitted nothing.
    await pollUntil(() => tailer.stats()[0]?.readOffset === statSync(file).size, 'partial bytes read');
    expect(tailer.stats()[0]?.offset).toBe(Buffer.byteLength(chatLine('user', 'one')));
    expect(texts(rec, file)).toEqual(['one']);
    appendFileSync(file, line.slice(12));
    await rec.until(() => rec.model(file).length === 2, 'second message');
    expect(texts(rec, file)).toEqual(['one', 'two']);
    expect(rec.of('line-error')).toEqual([]);
  });

  it('skips a 10 MB line over maxLineBytes, counts it, and stays in sync', async () => {
    const file = join(dir, 'big.jsonl');
    writeFileSync(file, chatLine('user', 'before'));
    const { rec, started, tailer } = startTailer({ maxLineBytes: 8 * 1024 * 1024 });
    await started;
    const big = chatLine('tool', 'x'.repeat(10 * 1024 * 1024));
    const fh = await open(file, 'a');
    for (let i = 0; i < big.length; i += 1024 * 1024) await fh.write(big.slice(i, i + 1024 * 1024));
    await fh.write(chatLine('assistant', 'after'));
    await fh.close();
    await rec.until(() => rec.model(file).length === 2, 'line after the big one');
    expect(texts(rec, file)).toEqual(['before', 'after']);
    expect(rec.of('line-error', file)).toEqual([{ file, sessionId: 'big', offset: Buffer.byteLength(chatLine('user', 'before')), kind: 'oversized', bytes: Buffer.byteLength(big) - 1 }]);
    expect(tailer.stats()[0]?.counts).toMatchObject({ lines: 3, oversizedLines: 1, malformedLines: 0 });
  });

  it('counts a binary garbage line as malformed and parses the next line', async () => {
    const { rec, started, tailer } = startTailer();
    await started;
    const file = join(dir, 'garbage.jsonl');
    writeFileSync(file, chatLine('user', 'ok'));
    await rec.until(() => rec.model(file).length === 1, 'first line');
    appendFileSync(file, Buffer.from([0x00, 0xff, 0x13, 0x37, 0x80, 0x7b, 0x0a]));
    appendFileSync(file, chatLine('assistant', 'still fine'));
    await rec.until(() => rec.model(file).length === 2, 'line after garbage');
    expect(rec.of('line-error', file)).toEqual([expect.objectContaining({ kind: 'malformed', bytes: 6 })]);
    expect(tailer.stats()[0]?.counts.malformedLines).toBe(1);
  });

  it('resets and rebuilds when a file is rewritten smaller (truncation) or rewritten in place (hermes rewrite)', async () => {
    const file = join(dir, '20260502_105844_797426.jsonl');
    writeFileSync(file, chatLine('user', 'a') + chatLine('assistant', 'b') + chatLine('user', 'c'));
    const { rec, started } = startTailer();
    await started;
    expect(texts(rec, file)).toEqual(['a', 'b', 'c']);
    const inode = statSync(file).ino;
    writeFileSync(file, chatLine('user', '[CONTEXT COMPACTION — REFERENCE ONLY] summary'));
    expect(statSync(file).ino).toBe(inode);
    await rec.until(() => rec.of('reset', file).length === 1 && rec.model(file).length === 1, 'reset + rebuild');
    expect(rec.of('reset', file)).toEqual([{ file, sessionId: '20260502_105844_797426', reason: 'truncated' }]);
    expect(rec.model(file)[0]).toMatchObject({ isSummary: true });
    // The reset precedes the rebuilt events.
    const resetAt = rec.log.findIndex((l) => l.name === 'reset');
    expect(rec.log.slice(resetAt + 1).some((l) => l.name === 'events')).toBe(true);

    // Same-inode rewrite to LONGER content than was read: only the bytes before the offset tell.
    const longer = chatLine('user', 'X') + chatLine('assistant', 'rewritten and much longer than before') + chatLine('user', 'z');
    writeFileSync(file, longer);
    await rec.until(() => rec.of('reset', file).length === 2 && rec.model(file).length === 3, 'second reset');
    expect(texts(rec, file)).toEqual(['X', 'rewritten and much longer than before', 'z']);
  });

  it('resets on rotation: renamed away and a new file created at the same path', async () => {
    const file = join(dir, 'rot.jsonl');
    writeFileSync(file, chatLine('user', 'old 1') + chatLine('assistant', 'old 2'));
    const { rec, started } = startTailer();
    await started;
    expect(texts(rec, file)).toEqual(['old 1', 'old 2']);
    renameSync(file, join(dir, 'rot.jsonl.1'));
    writeFileSync(file, chatLine('user', 'new 1') + chatLine('assistant', 'new 2') + chatLine('user', 'new 3'));
    await rec.until(() => rec.of('reset', file).length === 1 && rec.model(file).length === 3, 'rotation reset');
    expect(rec.of('reset', file)).toEqual([{ file, sessionId: 'rot', reason: 'rotated' }]);
    expect(texts(rec, file)).toEqual(['new 1', 'new 2', 'new 3']);
    expect(rec.of('removed')).toEqual([]);
  });

  it('reports a deleted file as removed without crashing, and keeps tailing others', async () => {
    const a = join(dir, 'a.jsonl');
    const b = join(dir, 'b.jsonl');
    writeFileSync(a, chatLine('user', 'a'));
    writeFileSync(b, chatLine('user', 'b'));
    const { rec, started, tailer } = startTailer();
    tailer.on('error', () => undefined);
    await started;
    unlinkSync(a);
    await rec.until(() => rec.of('removed').length === 1, 'removed');
    expect(rec.of('removed')).toEqual([{ file: a, sessionId: 'a' }]);
    expect(tailer.stats().map((s) => s.file)).toEqual([b]);
    appendFileSync(b, chatLine('assistant', 'b2'));
    await rec.until(() => rec.model(b).length === 2, 'b keeps going');
  });

  it('registers files outside the live window without reading them, then reads them from 0 when they change', async () => {
    const sub = join(dir, 'nested', 'deeper');
    mkdirSync(sub, { recursive: true });
    const old = join(sub, 'old.jsonl');
    writeFileSync(old, chatLine('user', 'ancient'));
    const past = new Date(Date.now() - 2 * 60 * 60 * 1000);
    utimesSync(old, past, past);
    const fresh = join(dir, 'fresh.jsonl');
    writeFileSync(fresh, chatLine('user', 'recent'));
    const { rec, started, tailer } = startTailer({ liveWindowMs: 30 * 60 * 1000 });
    await started;
    expect(rec.of('session').map((s) => s.file)).toEqual([fresh]);
    expect(tailer.stats().find((s) => s.file === old)).toMatchObject({ live: false, offset: 0 });
    appendFileSync(old, chatLine('assistant', 'revived'));
    await rec.until(() => rec.model(old).length === 2, 'revived file read from 0');
    expect(texts(rec, old)).toEqual(['ancient', 'revived']);
  });

  it('tails a Claude Code transcript appended in chunks and matches the offline decode', async () => {
    // A generated transcript with streaming duplicates, tool results and a compact boundary,
    // kept under a name the tailer ignores until it is appended to a watched .jsonl file.
    const src = join(dir, 'source.jsonl.src');
    writeFileSync(src, generateTranscript('claude-code', { seed: 5, turns: 6, compactAfterTurn: 4 }).jsonl);
    const bytes = readFileSync(src);
    const file = join(dir, 'session.jsonl');
    const { rec, started } = startTailer();
    await started;
    for (let i = 0; i < bytes.length; i += 4000) {
      await appendFile(file, bytes.subarray(i, i + 4000));
      if (i % 20000 === 0) await pause(3);
    }
    copyFileSync(src, join(dir, 'copy.jsonl.bak')); // a non-jsonl file in the tree is ignored
    const offline = await readTranscriptFile(src);
    const want = messages(offline.events).length;
    await rec.until(() => rec.of('events', file).reduce((n, b) => n + messages(b.events).length, 0) === want, 'all transcript messages');
    const live = rec.of('events', file).flatMap((b) => b.events);
    expect(live).toEqual(offline.events);
    expect(rec.of('session').map((s) => s.file)).toEqual([file]);
  });

  it('watches single files and applies format overrides by path prefix', async () => {
    const file = join(dir, 'chat.log');
    writeFileSync(file, chatLine('user', 'hi'));
    const { rec, started } = startTailer({ paths: [file], formatOverrides: { [dir]: 'openai-chat' } });
    await started;
    expect(rec.of('session')).toEqual([{ file, sessionId: 'chat.log', format: 'openai-chat' }]);
    appendFileSync(file, chatLine('assistant', 'there'));
    await rec.until(() => rec.model(file).length === 2, 'append to single file');
  });

  it('validates options, has an explicit lifecycle and an idempotent close', async () => {
    expect(() => new Tailer({ paths: [] })).toThrow(/paths/);
    expect(() => new Tailer({ paths: [dir], recheckMS: 5 } as unknown as TailerOptions)).toThrow(/recheckMS/);
    try {
      new Tailer({ paths: [dir], maxLineBytes: -1 });
      expect.unreachable();
    } catch (err) {
      expect(isContextdError(err, 'CONFIG_INVALID')).toBe(true);
    }
    const t = new Tailer({ paths: [dir] });
    expect(Object.isFrozen(t.options)).toBe(true);
    expect(t.options.recheckMs).toBe(55);
    expect(t.options.liveWindowMs).toBe(30 * 60 * 1000);
    expect(t.state).toBe('new');
    await t.start();
    await expect(t.start()).rejects.toSatisfy((e: unknown) => isContextdError(e, 'LIFECYCLE'));
    const p1 = t.close();
    const p2 = t.close();
    expect(p1).toBe(p2);
    expect(t.state).toBe('closing');
    await p1;
    expect(t.state).toBe('closed');
  });
});

import { mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isContextdError } from '../../src/util/errors.js';
import { readTranscriptFile, readTranscriptPrefix, sessionIdForFile, TranscriptDecoder, type LineError } from '../../src/ingest/index.js';
import type { TranscriptEvent } from '../../src/model/messages.js';
import { transcriptSamples } from '../fixtures/samples.js';
import { jsonl, messages } from './helpers.js';

describe('TranscriptDecoder', () => {
  it('holds a partial last line until its newline and tracks the committed offset', () => {
    const d = new TranscriptDecoder();
    const line = JSON.stringify({ role: 'user', content: 'héllo' });
    const bytes = Buffer.from(line + '\n');
    expect(d.push(bytes.subarray(0, 10))).toEqual([]);
    expect(d.committedOffset).toBe(0);
    expect(d.pendingBytes).toBe(10);
    expect(d.format).toBeUndefined();
    const events = d.push(bytes.subarray(10));
    expect(d.format).toBe('openai-chat');
    expect(messages(events)).toEqual([expect.objectContaining({ id: 'L0', text: 'héllo', sourceOffset: 0 })]);
    expect(d.committedOffset).toBe(bytes.length);
    expect(d.counts).toEqual({ lines: 1, malformedLines: 0, oversizedLines: 0, unknownLines: 0 });
  });

  it('reads a file that starts with a UTF-8 byte order mark from its first line; a mark later is text', () => {
    const errors: LineError[] = [];
    const d = new TranscriptDecoder({ onLineError: (e) => errors.push(e) });
    const first = JSON.stringify({ role: 'system', content: 'You are terse.' });
    const second = JSON.stringify({ role: 'user', content: 'hi' });
    const events = d.push(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`${first}\n${second}\n\ufeff${second}\n`)]));
    expect(messages(events).map((m) => m.text)).toEqual(['You are terse.', 'hi']);
    // a mark anywhere but at the start of the file is not one: that line is malformed, and said so
    expect(errors.map((e) => e.kind)).toEqual(['malformed']);
  });

  it('counts malformed, non-object, oversized and unknown lines; ignores blank lines; strips CR', () => {
    const errors: LineError[] = [];
    const d = new TranscriptDecoder({ maxLineBytes: 200, onLineError: (e) => errors.push(e) });
    const big = JSON.stringify({ role: 'user', content: 'x'.repeat(500) });
    const input = Buffer.concat([
      Buffer.from('\n   \n'),
      Buffer.from('{"role":"user","content":"a"}\r\n'),
      Buffer.from('{not json\n'),
      Buffer.from('[1,2]\n'),
      Buffer.from('42\n'),
      Buffer.from(big + '\n'),
      Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x0a]),
      Buffer.from('{"role":"narrator","content":"?"}\n'),
      Buffer.from('{"role":"assistant","content":"b"}\n'),
    ]);
    const events = d.push(input);
    expect(messages(events).map((m) => m.text)).toEqual(['a', 'b']);
    expect(d.counts).toEqual({ lines: 8, malformedLines: 4, oversizedLines: 1, unknownLines: 1 });
    expect(errors.map((e) => e.kind)).toEqual(['malformed', 'malformed', 'malformed', 'oversized', 'malformed']);
    const bigOffset = input.indexOf(Buffer.from(big));
    expect(errors[3]).toEqual({ offset: bigOffset, kind: 'oversized', bytes: big.length });
    expect(d.committedOffset).toBe(input.length);
  });

  it('detects the format from a later line and replays the lines held before it', () => {
    const d = new TranscriptDecoder();
    const events = d.push(jsonl({ note: 'preamble' }, { role: 'user', content: 'x' }));
    expect(d.format).toBe('openai-chat');
    // The held preamble line went through the adapter too (as an unknown line).
    expect(events[0]).toEqual({ type: 'unknown', lineType: 'no-role' });
    expect(messages(events)).toHaveLength(1);
    expect(d.counts.unknownLines).toBe(1);
  });

  it('honours a fixed format and starts offsets at startOffset; reset() starts over', () => {
    const d = new TranscriptDecoder({ format: 'codex', startOffset: 1000 });
    const events = d.push(jsonl({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'q' }] }));
    expect(messages(events)[0]?.id).toBe('L1000');
    expect(d.format).toBe('codex');
    d.reset();
    expect(d.counts.lines).toBe(0);
    expect(d.committedOffset).toBe(0);
    expect(messages(d.push(jsonl({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'q' }] })))[0]?.id).toBe('L0');
  });
});

describe('readTranscriptFile and readTranscriptPrefix', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'contextd-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('splits the events at line boundaries: each part is what a prefix read to that offset adds, whatever the chunking', async () => {
    const p = join(dir, 'split.jsonl');
    const lines = Array.from({ length: 9 }, (_, i) => `${JSON.stringify({ role: i % 2 ? 'assistant' : 'user', content: `line ${i} ${'x'.repeat(i * 7)}` })}\n`);
    writeFileSync(p, lines.join(''));
    const ends: number[] = [];
    lines.reduce((n, l) => (ends.push(n + Buffer.byteLength(l)), n + Buffer.byteLength(l)), 0);
    const end = ends[7] as number;
    // two splits at one offset, one at the very end, one at the start of the file
    const splitAt = [0, ends[1] as number, ends[4] as number, ends[4] as number, end];
    for (const chunkBytes of [5, 64, 1 << 20]) {
      const r = await readTranscriptFile(p, { format: 'openai-chat', endOffset: end, splitAt, chunkBytes });
      expect(r.splits).toHaveLength(splitAt.length);
      for (const [i, at] of splitAt.entries()) {
        const upTo = at === 0 ? [] : (await readTranscriptPrefix(p, 'openai-chat', at, undefined)).events;
        expect(r.events.slice(0, r.splits?.[i])).toEqual(upTo);
      }
      expect(r.events).toEqual((await readTranscriptPrefix(p, 'openai-chat', end, undefined)).events);
    }
  });

  it('parses a final line without newline, reports bytes, and names the session', async () => {
    const p = join(dir, 'abc-123.jsonl');
    writeFileSync(p, '{"role":"user","content":"one"}\n{"role":"assistant","content":"two"}');
    const r = await readTranscriptFile(p);
    expect(r.format).toBe('openai-chat');
    expect(messages(r.events).map((m) => m.text)).toEqual(['one', 'two']);
    expect(r.bytes).toBe(readFileSync(p).length);
    expect(sessionIdForFile(p)).toBe('abc-123');
    expect(sessionIdForFile('/x/agent-a4ca.jsonl')).toBe('agent-a4ca');
  });

  it('throws NOTHING_READ when no line parses and FORMAT_UNKNOWN when none is recognised', async () => {
    const junk = join(dir, 'junk.jsonl');
    writeFileSync(junk, 'not json\nstill not\n');
    await expect(readTranscriptFile(junk)).rejects.toSatisfy((e: unknown) => isContextdError(e, 'NOTHING_READ'));
    const empty = join(dir, 'empty.jsonl');
    writeFileSync(empty, '');
    await expect(readTranscriptFile(empty)).rejects.toSatisfy((e: unknown) => isContextdError(e, 'NOTHING_READ'));
    const foreign = join(dir, 'foreign.jsonl');
    writeFileSync(foreign, '{"a":1}\n{"b":2}\n');
    await expect(readTranscriptFile(foreign)).rejects.toSatisfy((e: unknown) => isContextdError(e, 'FORMAT_UNKNOWN'));
  });

  it('reads only the committed lines, in the given format, with the given or the default line limit', async () => {
    const p = join(dir, 'tail.jsonl');
    const first = '{"role":"user","content":"one"}\n';
    const long = `${JSON.stringify({ role: 'assistant', content: 'x'.repeat(300) })}\n`;
    writeFileSync(p, `${first}${long}{"role":"user","content":"not committed yet"}\n`);
    const end = Buffer.byteLength(first + long);
    const byDefault = await readTranscriptPrefix(p, 'openai-chat', end, undefined);
    expect(byDefault.format).toBe('openai-chat');
    expect(messages(byDefault.events).map((m) => m.text.length)).toEqual([3, 300]);
    expect(byDefault.bytes).toBe(end);
    const limited = await readTranscriptPrefix(p, 'openai-chat', end, 200);
    expect(messages(limited.events).map((m) => m.text)).toEqual(['one']);
    expect(limited.counts.oversizedLines).toBe(1);
  });

  it('refuses a file replaced under the same name since its inode was read (FILE_REPLACED)', async () => {
    const p = join(dir, 'tail.jsonl');
    const line = '{"role":"user","content":"one"}\n';
    writeFileSync(p, line);
    const ino = statSync(p).ino;
    expect(messages((await readTranscriptPrefix(p, 'openai-chat', line.length, undefined, { ino })).events)).toHaveLength(1);
    writeFileSync(join(dir, 'new.tmp'), '{"role":"user","content":"two"}\n');
    renameSync(join(dir, 'new.tmp'), p);
    await expect(readTranscriptPrefix(p, 'openai-chat', line.length, undefined, { ino })).rejects.toSatisfy((e: unknown) => isContextdError(e, 'FILE_REPLACED'));
  });
});

describe('chunking invariance (property)', () => {
  const samples = transcriptSamples();
  const decodeWhole = (bytes: Buffer) => {
    const d = new TranscriptDecoder();
    const events = d.push(bytes);
    return { events, counts: { ...d.counts }, offset: d.committedOffset, format: d.format };
  };

  for (const { name, bytes } of samples) {
    it(`${name}: any chunking yields the same events and counts as one push`, () => {
      const whole = decodeWhole(bytes);
      expect(whole.events.length).toBeGreaterThan(0);
      fc.assert(
        fc.property(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { minLength: 1, maxLength: 60 }), (cuts) => {
          const d = new TranscriptDecoder();
          const events: TranscriptEvent[] = [];
          let prev = 0;
          for (const cut of [...cuts].sort((a, b) => a - b)) {
            events.push(...d.push(bytes.subarray(prev, cut)));
            prev = cut;
          }
          events.push(...d.push(bytes.subarray(prev)));
          expect(events).toEqual(whole.events);
          expect(d.counts).toEqual(whole.counts);
          expect(d.committedOffset).toBe(whole.offset);
          expect(d.format).toBe(whole.format);
        }),
        { numRuns: 5 },
      );
    });
  }

  it('tiny chunks (1..7 bytes) over a whole file match too', () => {
    const bytes = samples.find((s) => s.name.startsWith('claude-code'))?.bytes ?? Buffer.alloc(0);
    expect(bytes.length).toBeGreaterThan(0);
    const whole = decodeWhole(bytes);
    const d = new TranscriptDecoder();
    const events: TranscriptEvent[] = [];
    let pos = 0;
    let step = 1;
    while (pos < bytes.length) {
      events.push(...d.push(bytes.subarray(pos, pos + step)));
      pos += step;
      step = (step % 7) + 1;
    }
    expect(events).toEqual(whole.events);
    expect(d.counts).toEqual(whole.counts);
  });
});

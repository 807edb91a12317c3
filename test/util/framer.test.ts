import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { LineFramer, type FramedLine } from '../../src/util/framer.js';

function feed(framer: LineFramer, data: Buffer, cuts: number[]): FramedLine[] {
  const points = [...new Set(cuts.map((c) => c % (data.length + 1)))].sort((a, b) => a - b);
  const out: FramedLine[] = [];
  let prev = 0;
  for (const p of [...points, data.length]) {
    out.push(...framer.push(data.subarray(prev, p)));
    prev = p;
  }
  return out;
}

describe('LineFramer', () => {
  it('yields whole lines, strips CR, holds a partial tail and tracks offsets', () => {
    const f = new LineFramer();
    const lines = f.push(Buffer.from('{"a":1}\r\n{"b":2}\n{"c"'));
    expect(lines.map((l) => l.bytes.toString())).toEqual(['{"a":1}', '{"b":2}']);
    expect(lines.map((l) => l.offset)).toEqual([0, 9]);
    expect(f.committedOffset).toBe(17);
    expect(f.pendingLength).toBe(4);
    expect(f.push(Buffer.from(':3}\n')).map((l) => l.bytes.toString())).toEqual(['{"c":3}']);
    expect(f.committedOffset).toBe(25);
  });

  it('copies lines by default; with borrowLines a whole line views the chunk, and a partial line survives the chunk being reused', () => {
    const chunk = Buffer.from('{"a":1}\n{"b"');
    const [copied] = new LineFramer().push(chunk);
    const f = new LineFramer({ borrowLines: true });
    const [whole] = f.push(chunk);
    expect(whole?.bytes.toString()).toBe('{"a":1}');
    chunk.fill(0x78); // the caller reuses its buffer for the next read
    expect(copied?.bytes.toString()).toBe('{"a":1}');
    expect(whole?.bytes.toString()).toBe('xxxxxxx'); // a view: no allocation for it
    const [rest] = f.push(Buffer.from(':2}\n'));
    expect(rest?.bytes.toString()).toBe('{"b":2}');
  });

  it('skips an oversized line without buffering it and stays in sync', () => {
    const f = new LineFramer({ maxLineBytes: 16 });
    const out = [...f.push(Buffer.from('short\n' + 'y'.repeat(10))), ...f.push(Buffer.from('z'.repeat(100))), ...f.push(Buffer.from('zz\nafter\n'))];
    expect(out.map((l) => [l.oversized, l.bytes.toString(), l.length])).toEqual([
      [false, 'short', 5],
      [true, '', 112],
      [false, 'after', 5],
    ]);
    expect(out[2]?.offset).toBe(6 + 112 + 1);
  });

  it('gives the same lines for any chunking of the same bytes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ maxLength: 30 }), fc.constant('x'.repeat(40))), { maxLength: 20 }),
        fc.array(fc.nat(2000), { maxLength: 12 }),
        (lines, cuts) => {
          const data = Buffer.from(lines.map((l) => `${l}\n`).join(''));
          const whole = new LineFramer({ maxLineBytes: 32 }).push(data);
          const chunked = feed(new LineFramer({ maxLineBytes: 32 }), data, cuts);
          expect(chunked).toEqual(whole);
        },
      ),
      { numRuns: 300 },
    );
  });
});

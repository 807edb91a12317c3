import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha1Hex } from '../../src/util/sha1.js';

describe('sha1Hex', () => {
  it('is node:crypto’s SHA-1 of the UTF-8 text, in hex', () => {
    for (const text of ['', 'abc', 'session\0fingerprint', 'naïve – ☃']) expect(sha1Hex(text)).toBe(createHash('sha1').update(text, 'utf8').digest('hex'));
    expect(sha1Hex('abc')).toBe('a9993e364706816aba3e25717850c26c9cd0d89d');
  });
});

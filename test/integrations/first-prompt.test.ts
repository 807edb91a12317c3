/** isFirstPrompt reads a transcript in chunks from the top and stops at the first model turn. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isFirstPrompt } from '../../src/integrations/hooks.js';

const dir = mkdtempSync(join(tmpdir(), 'ctxd-first-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const CHUNK = 64 * 1024;
const MARKER = '"type":"assistant"';

function userLine(i: number): string {
  return `${JSON.stringify({ type: 'user', message: { role: 'user', content: `prompt ${i} ${'x'.repeat(200)}` } })}\n`;
}

/** A transcript of user lines only, padded with a filler line to exactly `bytes`. */
function userOnly(bytes: number): string {
  let text = '';
  for (let i = 0; text.length < bytes - 300; i++) text += userLine(i);
  return text + ' '.repeat(bytes - text.length);
}

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe('isFirstPrompt', () => {
  it('is true without a transcript, or with one that holds no model turn (over several chunks)', () => {
    expect(isFirstPrompt(undefined)).toBe(true);
    expect(isFirstPrompt(join(dir, 'missing.jsonl'))).toBe(true);
    expect(isFirstPrompt(file('empty.jsonl', ''))).toBe(true);
    expect(isFirstPrompt(file('users.jsonl', userOnly(3 * CHUNK + 123)))).toBe(true);
  });

  it('finds a Claude Code or Codex model turn wherever it is, also split across two reads', () => {
    expect(isFirstPrompt(file('claude.jsonl', `${userLine(0)}{${MARKER},"message":{}}\n`))).toBe(false);
    expect(isFirstPrompt(file('codex.jsonl', `${userLine(0)}{"type":"response_item","payload":{"role":"assistant"}}\n`))).toBe(false);
    for (const cut of [1, 7, MARKER.length - 1]) {
      // The marker starts `cut` bytes before a chunk boundary, so no single read holds all of it.
      const text = `${userOnly(2 * CHUNK - cut)}${MARKER}\n`;
      expect(Buffer.from(text).subarray(0, 2 * CHUNK).includes(MARKER)).toBe(false);
      expect(isFirstPrompt(file(`split-${cut}.jsonl`, text)), `cut ${cut}`).toBe(false);
    }
    expect(isFirstPrompt(file('late.jsonl', `${userOnly(5 * CHUNK)}{${MARKER}}\n`))).toBe(false);
  });
});

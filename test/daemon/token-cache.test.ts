import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Daemon } from '../../src/daemon/daemon.js';
import { resolveDaemonOptions } from '../../src/daemon/config.js';
import { createTokenCounter, MIN_CACHED_CHARS, type TokenCounter } from '../../src/model/tokens.js';
import { demoTranscriptJsonl } from '../../src/demo/transcript.js';
import { ContextdClient } from '../../src/ipc/client.js';
import { TokenCounts, openDb } from '../../src/store/index.js';
import { SqliteTokenCountCache } from '../../src/daemon/token-cache.js';

const dirs: string[] = [];
const daemons: Daemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The real tokenizer, recording every text it is asked to count. */
function recordingCounter(): TokenCounter & { texts: string[] } {
  const real = createTokenCounter();
  const texts: string[] = [];
  return { encoding: real.encoding, texts, count: (t) => (texts.push(t), real.count(t)) };
}

async function run(dir: string, counter: TokenCounter): Promise<number> {
  const options = resolveDaemonOptions({}, { watch: [join(dir, 'sessions')], socket: join(dir, 's.sock'), state: join(dir, 'state'), budgetTokens: 1_000_000 });
  const daemon = new Daemon(options, { logger: pino({ level: 'silent' }), tokenCounter: counter });
  daemons.push(daemon);
  await daemon.start();
  const client = new ContextdClient({ socketPath: options.socketPath, clientInfo: { name: 'test', version: '1' }, reconnect: false });
  await client.connect();
  const status = await client.status();
  await client.close();
  await daemon.stop();
  const sessions = status.sessions as { tokens: number }[];
  expect(sessions).toHaveLength(1);
  return sessions[0]?.tokens ?? 0;
}

describe('token counts persisted by content hash', () => {
  it('a restart on existing state does not tokenize the messages counted before', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-tokcache-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'sessions'));
    writeFileSync(join(dir, 'sessions', 'a.jsonl'), demoTranscriptJsonl({ rounds: 6 }));

    const first = recordingCounter();
    const tokensFirst = await run(dir, first);
    expect(first.texts.length).toBeGreaterThan(50);

    const second = recordingCounter();
    const tokensSecond = await run(dir, second);
    expect(tokensSecond).toBe(tokensFirst);
    // Only messages too short to be worth a lookup (MIN_CACHED_CHARS) reach the tokenizer again.
    const chars = (texts: readonly string[]) => texts.reduce((n, t) => n + t.length, 0);
    expect(second.texts.filter((t) => t.length >= MIN_CACHED_CHARS)).toEqual([]);
    expect(chars(second.texts)).toBeLessThan(chars(first.texts) * 0.05);
  });

  it('buffers new counts and writes them on flush; a lookup before the flush is served from the buffer', () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-tokcache-'));
    dirs.push(dir);
    const db = openDb(join(dir, 'c.db'));
    try {
      const cache = new SqliteTokenCountCache(new TokenCounts(db), pino({ level: 'silent' }));
      const texts = ['x'.repeat(200), '', 'grep', '{"pattern":"total"}'];
      cache.set('o200k_base', texts, [25, 0, 1, 6]);
      expect(cache.get('o200k_base', texts)).toEqual([25, 0, 1, 6]);
      expect(db.prepare('SELECT COUNT(*) FROM token_counts').pluck().get()).toBe(0);
      cache.flush();
      expect(db.prepare('SELECT COUNT(*) FROM token_counts').pluck().get()).toBe(1);
      expect(cache.get('o200k_base', texts)).toEqual([25, 0, 1, 6]);
      expect(cache.get('cl100k_base', texts)).toBeUndefined();
      // The split between texts is part of the key.
      expect(cache.get('o200k_base', ['x'.repeat(200), 'grep', '', '{"pattern":"total"}'])).toBeUndefined();
      cache.close();
    } finally {
      db.close();
    }
  });
});

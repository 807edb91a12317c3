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
import { SessionModel } from '../../src/model/index.js';
import { createOpenAIChatAdapter } from '../../src/ingest/adapters/openai-chat.js';
import { demoTranscript } from '../../src/demo/transcript.js';

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
    // The transcript is read back in batches, every message of which is looked up: nothing
    // reaches the tokenizer again (its tables need not even be loaded).
    expect(first.texts.some((t) => t.length < MIN_CACHED_CHARS)).toBe(true);
    expect(second.texts).toEqual([]);
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

  it('looks up many messages in one batch: pending, stored and missing ones in order, across chunks of the IN query', () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-tokcache-'));
    dirs.push(dir);
    const db = openDb(join(dir, 'c.db'));
    try {
      const cache = new SqliteTokenCountCache(new TokenCounts(db), pino({ level: 'silent' }));
      const list = Array.from({ length: 1_203 }, (_, i) => [`message ${i} `.repeat(8), '', `tool_${i % 7}`]);
      // Stored: every even one; pending (not flushed): every 5th odd one; the rest are missing.
      list.forEach((texts, i) => i % 2 === 0 && cache.set('o200k_base', texts, [i, 0, 1]));
      cache.flush();
      list.forEach((texts, i) => i % 2 === 1 && i % 5 === 0 && cache.set('o200k_base', texts, [i, 0, 2]));
      const got = cache.getMany('o200k_base', list);
      expect(got).toHaveLength(list.length);
      got.forEach((c, i) => expect(c).toEqual(i % 2 === 0 ? [i, 0, 1] : i % 5 === 0 ? [i, 0, 2] : undefined));
      // The same answers as one lookup at a time.
      expect(list.map((t) => cache.get('o200k_base', t))).toEqual(got);
      expect(cache.getMany('cl100k_base', list.slice(0, 3))).toEqual([undefined, undefined, undefined]);
      cache.close();
      db.close();
      // A store that can no longer be read: nothing cached, nothing thrown (the counts are counted instead).
      expect(cache.getMany('o200k_base', list.slice(0, 2))).toEqual([undefined, undefined]);
    } finally {
      if (db.open) db.close();
    }
  });

  it('a model fed in batches through the cache has the counts, sections and scores of one counted message by message', () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-tokcache-'));
    dirs.push(dir);
    const db = openDb(join(dir, 'c.db'));
    try {
      const counter = createTokenCounter();
      const adapter = createOpenAIChatAdapter();
      const events = demoTranscript({ rounds: 12 }).flatMap((l, i) => adapter.parseLine(JSON.parse(JSON.stringify(l)) as Record<string, unknown>, i * 1000));
      const plain = new SessionModel({ sessionId: 'a', tokenCounter: counter });
      for (const e of events) plain.apply(e);
      const build = () => {
        const cache = new SqliteTokenCountCache(new TokenCounts(db), pino({ level: 'silent' }));
        const m = new SessionModel({ sessionId: 'a', tokenCounter: counter, tokenCache: cache });
        for (let i = 0; i < events.length; i += 40) m.applyAll(events.slice(i, i + 40));
        cache.close();
        return m;
      };
      const cold = build();
      const warm = build();
      for (const m of [cold, warm]) {
        expect(m.tokens()).toBe(plain.tokens());
        expect(m.sections()).toEqual(plain.sections());
      }
      expect(db.prepare('SELECT COUNT(*) FROM token_counts').pluck().get()).toBeGreaterThan(20);
    } finally {
      db.close();
    }
  });
});


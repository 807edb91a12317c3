/** `bench latency --rss-only`: the memory part alone, with what the RSS consists of (never asserts sizes or times). */
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { benchLatency } from '../../src/bench/latency.js';

describe('bench latency, RSS part only', () => {
  it('starts the daemon cold then again on its state, and reports what the RSS consists of at each reading', async () => {
    const r = await benchLatency({ rssOnly: true, rssSessions: 3, rssRounds: 6 });
    expect(r['latency']).toBeUndefined();
    expect(r['limits']).toBeUndefined();
    const rss = r['rss'] as Record<string, unknown>;
    expect(rss).toMatchObject({ sessions: 3, restartTokensMatch: true });
    expect(rss['tokensPerSession']).toBeGreaterThan(1_000);
    for (const key of ['rssParts', 'rssAfterRestartParts']) {
      const parts = rss[key] as Record<string, number>;
      expect(parts, key).toMatchObject({ sessionsInMemory: 3 });
      expect(parts['heapUsed'], key).toBeGreaterThan(0);
      expect(parts['heapTotal'], key).toBeGreaterThanOrEqual(parts['heapUsed'] as number);
      expect(parts['heldMTokens'], key).toBeGreaterThan(0);
      if (existsSync('/proc/self/smaps_rollup')) expect(parts['anonymous'], key).toBeGreaterThan(0);
    }
  }, 120_000);
});

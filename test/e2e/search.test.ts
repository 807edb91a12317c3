import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ContextdClient, RpcError, type SearchResult, type WirePlan } from '../../src/ipc/client.js';
import { demoTranscript } from '../../src/demo/transcript.js';
import { e2eScope, runCli, subscribeWhenSeen } from './spawn.js';

const scope = e2eScope();

describe('archive.search over the socket and `contextd recall --search`', () => {
  it('finds what a compaction archived, by what it is about, through the socket and the CLI', async () => {
    const { watch, socket, state } = scope.tempDir('search-e2e');
    await scope.daemon(['--watch', watch, '--socket', socket, '--state', state, '--budget', '20000']);
    const file = join(watch, 'billing.jsonl');
    writeFileSync(file, demoTranscript({ rounds: 12, variant: 'a' }).map((l) => JSON.stringify(l)).join('\n') + '\n');

    // The client finds the daemon through $CONTEXTD_SOCKET when no socketPath is given.
    const saved = process.env['CONTEXTD_SOCKET'];
    process.env['CONTEXTD_SOCKET'] = socket;
    let c: ContextdClient;
    try {
      c = new ContextdClient({ clientInfo: { name: 'search-e2e', version: '1' }, reconnect: false });
    } finally {
      if (saved === undefined) delete process.env['CONTEXTD_SOCKET'];
      else process.env['CONTEXTD_SOCKET'] = saved;
    }
    expect(c.socketPath).toBe(socket);
    await c.connect();
    scope.defer(() => c.close());

    const sessionId = await subscribeWhenSeen(c, file);
    const plan = (await c.compact(sessionId, {})) as WirePlan;
    expect(plan.edits.length).toBeGreaterThan(0);
    const handle = plan.edits.find((e) => e.handle !== undefined)?.handle as string;
    const originals = await c.recall(sessionId, handle);
    const line = originals.messages.map((m) => m.text).find((t) => t.trim().length > 20) as string;
    const query = line.split('\n')[0] as string;

    const res = await c.archiveSearch({ query, sessionId, limit: 50 });
    expect(res.hits.map((h) => h.handle)).toContain(handle);
    const hit = res.hits.find((h) => h.handle === handle);
    expect(hit?.messages).toEqual(originals.messages);
    for (const h of res.hits) expect(h.sessionId).toBe(sessionId);
    for (let i = 1; i < res.hits.length; i++) expect(res.hits[i - 1]!.score).toBeGreaterThanOrEqual(res.hits[i]!.score);
    expect((await c.archiveSearch({ query, limit: 1 })).hits).toHaveLength(1);
    expect((await c.archiveSearch({ query, sessionId: 'no-such-session' })).hits).toEqual([]);
    // User punctuation and FTS5 operators never reach MATCH raw.
    expect((await c.archiveSearch({ query: '"billing AND (NEAR config:* ^' })).hits.length).toBeGreaterThan(0);
    const bad = await c.archiveSearch({ query: 'x', limit: 0 }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(RpcError);
    expect((bad as RpcError).code).toBe(-32602);
    expect((bad as RpcError).message).toContain('limit');

    // The CLI reads the same archive from the state directory.
    const cli = await runCli(['recall', '--search', query, '--session', sessionId, '--limit', '50', '--state', state, '--json']);
    expect(cli.code, cli.stderr).toBe(0);
    const parsed = JSON.parse(cli.stdout) as SearchResult;
    expect(parsed.hits.map((h) => h.handle)).toEqual(res.hits.map((h) => h.handle));
    const human = await runCli(['recall', '--search', query, '--limit', '2', '--state', state]);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^h_\w+ {2}session \S+ {2}score \d+\.\d\d/);
    const none = await runCli(['recall', '--search', 'zzqx-nothing-matches', '--state', state]);
    expect(none.stdout).toContain('no archived originals match');
    expect((await runCli(['recall', '--state', state])).code).toBe(2);
    expect((await runCli(['recall', handle, '--search', 'x', '--state', state])).code).toBe(2);
    expect((await runCli(['recall', handle, '--limit', '3', '--state', state])).code).toBe(2);
    expect((await runCli(['recall', '--search', 'x', '--limit', '99', '--state', state])).code).toBe(2);
  }, 180_000);
});

import { afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { harvestFiles, harvestSession, looksRandom, redact, redactAll, redactMessages, redactSync, redactToolNames } from '../../src/harvest/index.js';
import type { Message } from '../../src/model/messages.js';
import { writeWarmSnapshot } from '../../src/warm/snapshot.js';
import { WARM_SNAPSHOT_FILE } from '../../src/warm/snapshot-format.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { openDb } from '../../src/store/db.js';
import { TemplateStore } from '../../src/store/templates.js';
import { createLogger } from '../../src/util/logger.js';
import { exportTemplates } from '../../src/warm/index.js';
import { SessionBuilder, cleanup, plantedSecrets, prng, randomChars, tempDir, trackDb } from './fixtures.js';

afterEach(cleanup);

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

describe('redact', () => {
  it('replaces every planted secret kind with a [REDACTED:<rule>] marker', async () => {
    for (const seed of [1, 2, 3]) {
      for (const s of plantedSecrets(seed)) {
        const r = await redact(`before ${s.text} after`);
        for (const leak of s.mustNotLeak) expect(r.text, `${s.kind} leaked`).not.toContain(leak);
        expect(r.text).toContain('[REDACTED:');
        expect(r.text.startsWith('before ')).toBe(true);
        expect(r.findings.reduce((n, f) => n + f.count, 0)).toBeGreaterThan(0);
      }
    }
  });

  it('names the rule in the marker and counts findings', () => {
    const [aws] = plantedSecrets(7);
    const r = redactSync(`key=${aws?.text ?? ''} and mail bob.smith@example.org`);
    expect(r.text).toContain('[REDACTED:aws-access-key]');
    expect(r.text).toContain('[REDACTED:email]');
    expect(r.findings).toEqual(expect.arrayContaining([{ rule: 'aws-access-key', count: 1 }, { rule: 'email', count: 1 }]));
  });

  it('runs secretlint as a second layer (a Shopify token only secretlint knows)', async () => {
    const token = `shpat_${randomChars(prng(5), 32, '0123456789abcdef')}`;
    expect(redactSync(token).text).toContain(token); // our rules do not know it
    const r = await redact(`export SHOP=${token}`);
    expect(r.text).not.toContain(token);
    expect(r.findings.map((f) => f.rule)).toContain('shopify');
  });

  it('redacts a batch with one secretlint pass and keeps texts apart', async () => {
    const secrets = plantedSecrets(11);
    const texts = ['plain text', ...secrets.map((s) => `x ${s.text} y`), ''];
    const r = await redactAll(texts);
    expect(r.texts).toHaveLength(texts.length);
    expect(r.texts[0]).toBe('plain text');
    expect(r.texts[texts.length - 1]).toBe('');
    for (const s of secrets) for (const leak of s.mustNotLeak) expect(r.texts.join('\n')).not.toContain(leak);
  });

  it('keeps ordinary technical text intact', async () => {
    const text = [
      'ran npm run build in src/harvest/redact-rules.ts',
      'commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 on main',
      'session 019a93b9-f380-7600-98ff-940e6b99603c with claude-sonnet-4-20250514',
      'createTokenCounterFromModel and context7__resolve-library-id',
      'git@github.com:AcidicSoil/chatbot-ui.git',
      'max_tokens: 4096, password: string',
    ].join('\n');
    const r = await redact(text);
    expect(r.text).toBe(text);
    expect(r.findings).toEqual([]);
  });

  it('judges an absolute path by its folders: a temp suffix is kept, a key as a folder is not', () => {
    expect(looksRandom('/tmp/contextd-harvest-aB3xY9Qz/a/bad')).toBe(false);
    expect(looksRandom('/tmp/contextd-harvest-Zq81Kd/subdir-7Hx2Lp/a/b/one')).toBe(false);
    expect(looksRandom('/srv/keys/Xk29Vb7Qm3Lp8Rt5Wz1Nc6Hd4')).toBe(true);
  });

  it('catches random base62 tokens of 32 to 64 chars by entropy, whatever their prefix (property)', () => {
    // A short random key can measure well under 4 bits/char: this one measures 3.80 and was missed.
    expect(redactSync('value dwkidDDQMilKl1LkiOPPOiM5DhiDKkn5 end').text).not.toContain('dwkidDDQ');
    // Seeded: a random key can look like a name by chance (see the next test), and CI must not
    // turn red on a draw. A million seeded draws at 32-64 chars were all caught.
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000 }), fc.integer({ min: 32, max: 64 }), fc.constantFrom('', 'tok_', 'key-', 'X'), (seed, length, prefix) => {
        const core = randomChars(prng(seed), length, BASE62);
        if (!/[0-9]/.test(core) || !/[a-z]/.test(core) || !/[A-Z]/.test(core)) return;
        const r = redactSync(`value ${prefix}${core} end`);
        expect(r.text).not.toContain(core);
      }),
      { numRuns: 500, seed: 20261127 },
    );
    expect(looksRandom('src/harvest/redact-rules')).toBe(false);
  });

  it('misses fewer than 1 in 1,000 random 24-char base62 keys', () => {
    // The shortest candidates can look like a camelCase name or hold long runs of one case
    // (`fcxmjJNIYAB4gPBJFEIaveyo`): about 2 in 10,000 are missed (a million draws).
    const rand = prng(424242);
    let drawn = 0;
    let missed = 0;
    while (drawn < 10_000) {
      const key = randomChars(rand, 24, BASE62);
      if (!/[0-9]/.test(key) || !/[a-z]/.test(key) || !/[A-Z]/.test(key)) continue;
      drawn++;
      if (!looksRandom(key)) missed++;
    }
    expect(missed).toBeLessThan(10);
  });
});

describe('nothing planted reaches the database, WAL, export or logs', () => {
  it('harvests sessions full of secrets into a real SQLite file and proves no secret is in any byte', async () => {
    const dir = tempDir();
    const transcripts = join(dir, 'transcripts');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(transcripts);
    const secrets = plantedSecrets(42);
    const get = (kind: string): string => secrets.find((s) => s.kind === kind)?.text ?? '';
    const all = secrets.map((s) => s.text).join('\n');
    // Two sessions of the same kind (so patterns promote and templates merge), one different.
    for (const [i, task] of ['deploy the api service to staging', 'deploy the api service to staging again'].entries()) {
      new SessionBuilder(Date.parse('2026-11-20T10:00:00Z') + i * 3_600_000)
        .system(`# Deploy rules\nThe deploy key is ${get('github-token')}.\nContact ${get('email')}.`)
        .user(`${task}. Always cc ${get('email')} on the release notes. The db is ${get('url-password')}.`)
        .call('terminal', { command: `curl -H "Authorization: Bearer ${get('jwt')}" https://api.example.com/deploy` }, `deployed with token ${get('openai-key')}`)
        .call('terminal', { command: 'npm run deploy' }, `Error: cannot connect to ${get('url-password')} (auth failed for ${get('aws-access-key')})`, { error: true })
        .call('patch', { path: 'config/deploy.env', old_string: 'x', new_string: `${get('aws-secret-key')}\nSLACK=${get('slack-token')}` }, 'patched')
        .call('terminal', { command: 'npm run deploy' }, `ok, uploaded as ${get('aws-access-key')}`)
        .call('read_file', { path: 'keys/id_rsa' }, get('private-key'))
        .call('terminal', { command: `export ANTHROPIC_API_KEY=${get('anthropic-key')} && npm test` }, `PASS\n${get('github-pat')}`)
        .user(`can you also check the key ${get('anthropic-key')} works?`)
        .assistant(`Done. I used ${get('openai-key')}.`)
        .writeTo(join(transcripts, `session-${i}.jsonl`));
    }
    writeFileSync(join(transcripts, `broken-${get('email')}.jsonl`), `not json ${all}\n`);

    const dbPath = join(dir, 'state', 'contextd.db');
    const db = trackDb(openDb(dbPath));
    const store = new TemplateStore(db);
    const logPath = join(dir, 'harvest.log');
    const logger = createLogger({ level: 'debug', destination: pino.destination({ dest: logPath, sync: true }) });
    const summary = await harvestFiles([transcripts], { store, tokenCounter: createTokenCounter(), logger });

    // The harvest did real work: two sessions stored, the broken file reported.
    expect(summary.harvested).toBe(2);
    expect(summary.failed).toHaveLength(1);
    expect(store.count()).toBeGreaterThan(0);
    const exportPath = join(dir, 'export.json');
    await exportTemplates(store, exportPath);
    const exported = readFileSync(exportPath, 'utf8');
    expect(exported).toContain('[REDACTED:');
    expect(exported).toContain('npm run deploy');

    const walBytes = existsSync(`${dbPath}-wal`) ? readFileSync(`${dbPath}-wal`) : Buffer.alloc(0);
    const dbBytesLive = readFileSync(dbPath);
    db.close();
    const dbBytesClosed = readFileSync(dbPath);
    const logText = readFileSync(logPath, 'utf8');
    expect(logText).toContain('session harvested');
    const summaryText = JSON.stringify(summary);

    const haystacks: [string, string][] = [
      ['db (live)', dbBytesLive.toString('latin1')],
      ['wal', walBytes.toString('latin1')],
      ['db (closed)', dbBytesClosed.toString('latin1')],
      ['export', exported],
      ['log', logText],
      ['summary', summaryText],
    ];
    // Sanity: the stored data is there in plain text (so a leak would be visible).
    expect(haystacks.some(([, h]) => h.includes('deploy the api service'))).toBe(true);
    for (const s of secrets) {
      for (const leak of s.mustNotLeak) {
        for (const [where, h] of haystacks) expect(h.includes(leak), `${s.kind} found in ${where}`).toBe(false);
      }
    }
  });
});

describe('tool names', () => {
  const ORDINARY = ['Read', 'Bash', 'exec_command', 'apply_patch', 'mcp__github__create_pull_request', 'mcp__claude_ai_Google_Drive__search_files', 'mcp__github__get_pull_request_review_comments', 'mcp__plugin_playwright_playwright__browser_navigate', 'mcp__context7__resolve-library-id'];
  const key = (seed: number): { name: string; leak: string } => {
    const ghp = plantedSecrets(seed).find((s) => s.kind === 'github-token');
    return { name: `mcp__${ghp?.text ?? ''}__query`, leak: ghp?.mustNotLeak[0] ?? 'unset' };
  };
  const calls = (names: readonly string[]): Message[] =>
    names.flatMap((name, i): Message[] => [
      { id: `a${i}`, role: 'assistant', text: '', toolCalls: [{ id: `c${i}`, name, arguments: '{"q":"x"}' }] },
      { id: `t${i}`, role: 'tool', text: 'ok', toolCallId: `c${i}`, toolName: name },
    ]);
  const names = (ms: readonly Message[]): string[] => ms.flatMap((m) => [...(m.toolCalls ?? []).map((c) => c.name), ...(m.toolName !== undefined ? [m.toolName] : [])]);

  it('are redacted where a key is in them, alike in a call and its result, and kept as they are otherwise', async () => {
    const { name, leak } = key(5);
    for (const redactor of [redactToolNames, redactMessages]) {
      const r = await redactor(calls([...ORDINARY, name]));
      const out = names(r.messages);
      expect(out.slice(0, ORDINARY.length * 2)).toEqual(ORDINARY.flatMap((n) => [n, n]));
      const [call, result] = out.slice(ORDINARY.length * 2);
      expect(call).toBe('mcp__[REDACTED:github-token]__query');
      expect(result).toBe(call);
      expect(JSON.stringify(r.messages)).not.toContain(leak);
      expect(r.findings).toContainEqual({ rule: 'github-token', count: 2 });
    }
  });

  it('reach no template, export or warm snapshot verbatim, nor the categories derived from them', async () => {
    const { name, leak } = key(8);
    const dir = tempDir();
    const dbPath = join(dir, 'state', 'contextd.db');
    const db = trackDb(openDb(dbPath));
    const store = new TemplateStore(db);
    const logger = createLogger({ level: 'silent' });
    for (const [i, task] of ['find the open issues about the parser in the tracker', 'find the open issues about the parser in the tracker again'].entries()) {
      const session = new SessionBuilder(Date.parse('2026-11-20T10:00:00Z') + i * 3_600_000)
        .user(task)
        .call(name, { query: 'parser is:open' }, 'Error: rate limited', { error: true })
        .call(name, { query: 'parser is:open', per_page: 10 }, '12 issues')
        .call('read_file', { path: 'src/parser.ts' }, 'export function parse() {}')
        .call(name, { query: 'parser label:bug' }, '3 issues');
      const r = await harvestSession({ sessionId: `s${i}`, messages: session.messages, meta: { repo: 'acme/parser' } }, { store, tokenCounter: createTokenCounter(), logger });
      expect(r.skipped).toBeUndefined();
      expect(r.redactions.some((f) => f.rule === 'github-token')).toBe(true);
    }
    const categories = store.list().flatMap((t) => store.get(t.id, 0)?.items.map((it) => it.category) ?? []);
    expect(categories).toContain('mcp__[REDACTED:github-token]__query');
    expect(categories).toContain('read_file');
    const exportPath = join(dir, 'export.json');
    await exportTemplates(store, exportPath);
    expect(writeWarmSnapshot(store, join(dir, 'state'), Date.now())).toMatchObject({ written: true });
    db.pragma('wal_checkpoint(TRUNCATE)');
    const haystacks: [string, string][] = [
      ['export', readFileSync(exportPath, 'utf8')],
      ['snapshot', readFileSync(join(dir, 'state', WARM_SNAPSHOT_FILE), 'utf8')],
      ['db', readFileSync(dbPath).toString('latin1')],
    ];
    for (const [where, h] of haystacks) {
      expect(h, where).toContain('mcp__[REDACTED:github-token]__query');
      expect(h.includes(leak), `key found in ${where}`).toBe(false);
    }
  });
});

describe('secretlint profiling', () => {
  it('leaves no performance marks behind, however many batches are redacted', async () => {
    const { performance } = await import('node:perf_hooks');
    const before = performance.getEntriesByType('mark').length;
    for (let i = 0; i < 20; i++) {
      const out = await redactAll([`batch ${i}: AKIA${'Z'.repeat(12)}ABCD and nothing else`]);
      expect(out.texts).toHaveLength(1);
    }
    // Let the observer deliver whatever was marked.
    await new Promise((r) => setTimeout(r, 20));
    expect(performance.getEntriesByType('mark').length).toBe(before);
  });
});

import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createExtractiveSummarizer, createOpenAISummarizer, createSummarizer, extractiveSummary } from '../../src/compact/summarize/index.js';
import type { SummarizeInput } from '../../src/compact/types.js';
import { Script, fileBody, jsTrace } from './helpers.js';
import { memoComputations } from '../../src/compact/memo.js';

function inputOf(script: Script, extra: Partial<SummarizeInput> = {}): SummarizeInput {
  const model = script.model();
  const sections = model.sections().filter((s) => s.kind !== 'system');
  return { reason: 'low-score', sections, messages: sections.flatMap((s) => [...model.messagesOf(s.id)]), goal: model.goal().text, ...extra };
}

const session = (): Script =>
  new Script()
    .user('Fix the pool. It must never drop connections.')
    .assistant('Reading the pool config first, see https://example.com/docs/pool#limits for limits.')
    .tool('Bash', { command: 'cat config/pool.yaml' }, ['max_connections: 250', 'idle_timeout_ms = 30000', 'name: primary'].join('\n'))
    .tool('Bash', { command: 'npm test -- pool' }, jsTrace('src/server/pool.ts'), true)
    .tool('Edit', { file_path: 'src/server/pool.ts', old_string: 'release()', new_string: 'release?.()' }, 'ok')
    .assistant('I compared acquireConnection with releaseConnection. The root cause is a release on an undefined client. The fix is to guard the release call.');

describe('extractive summarizer', () => {
  it('keeps exception lines, paths, commands, config values, URLs and the conclusion', async () => {
    const text = await createExtractiveSummarizer().summarize(inputOf(session(), { maxTokens: 400 }));
    expect(text).toContain("TypeError: Cannot read properties of undefined (reading 'release')");
    expect(text).toContain('src/server/pool.ts:42:13');
    expect(text).toContain('edited src/server/pool.ts');
    expect(text).toContain('`cat config/pool.yaml`');
    expect(text).toContain('https://example.com/docs/pool#limits');
    expect(text).toContain('The fix is to guard the release call.');
    expect(text).toContain('acquireConnection');
  });

  it('prefers facts a later turn refers to, and stays within its bound', () => {
    const cfg = Array.from({ length: 120 }, (_, i) => `setting_${i}_value: ${1000 + i}`);
    cfg.splice(77, 0, 'pool_max_idle_ms: 45000');
    const script = new Script().user('Tune the pool.').tool('Read', { file_path: 'config/app.yaml' }, cfg.join('\n'));
    const withTerms = extractiveSummary(inputOf(script, { maxTokens: 80, keyTerms: ['pool_max_idle_ms'] }));
    const without = extractiveSummary(inputOf(script, { maxTokens: 80 }));
    expect(withTerms).toContain('pool_max_idle_ms: 45000');
    expect(without).not.toContain('pool_max_idle_ms: 45000');
    expect(withTerms.length).toBeLessThanOrEqual(80 * 3.5);
    expect(without.length).toBeLessThanOrEqual(80 * 3.5);
  });

  it('is deterministic', () => {
    const a = extractiveSummary(inputOf(session()));
    const b = extractiveSummary(inputOf(session()));
    expect(a).toBe(b);
  });

  it('a re-summary with other key terms and budget (facts read from the memo) says what a summary of fresh messages says', () => {
    const cfg = Array.from({ length: 120 }, (_, i) => `setting_${i}_value: ${1000 + i}`);
    cfg.splice(77, 0, 'pool_max_idle_ms: 45000');
    const script = session().tool('Read', { file_path: 'config/app.yaml' }, cfg.join('\n'));
    const input = inputOf(script, { maxTokens: 120 });
    extractiveSummary(input);
    const before = memoComputations();
    const again = extractiveSummary({ ...input, maxTokens: 220, keyTerms: ['pool_max_idle_ms', 'release'] });
    expect(memoComputations() - before).toBe(0);
    // The same words from new message objects (nothing memoized on them), and the key term's
    // fact from the tail of the dump is kept only because it is mentioned.
    const fresh = extractiveSummary({ ...inputOf(script), maxTokens: 220, keyTerms: ['pool_max_idle_ms', 'release'] });
    expect(again).toBe(fresh);
    expect(again).toContain('pool_max_idle_ms: 45000');
  });

  it('writes a pointer for a redundant output', () => {
    const text = extractiveSummary(inputOf(new Script().user('x y z w').tool('Bash', { command: 'ls' }, fileBody('a', 10)), { reason: 'redundant-tool-output', detail: { newer: 's9', except: ['line only here'] } }));
    expect(text).toContain('A later identical call returned the same output, except:');
    expect(text).toContain('line only here');
    // the agent never sees section ids: a summary must not name one
    expect(text).not.toMatch(/\bs\d+\b|section/);
  });
});

type Mode = 'ok' | 'slow' | '500' | 'malformed' | 'not-json';

describe('openai summarizer (real HTTP server)', () => {
  const servers: http.Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => { s.closeAllConnections(); s.close(() => r()); })));
  });

  async function serve(mode: Mode): Promise<{ baseUrl: string; requests: { url: string; auth: string | undefined; body: Record<string, unknown> }[] }> {
    const requests: { url: string; auth: string | undefined; body: Record<string, unknown> }[] = [];
    const server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        requests.push({ url: req.url ?? '', auth: req.headers.authorization, body: JSON.parse(raw) as Record<string, unknown> });
        if (mode === 'slow') return; // never answers; the client must time out
        if (mode === '500') {
          res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"boom"}');
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        if (mode === 'malformed') res.end(JSON.stringify({ choices: [] }));
        else if (mode === 'not-json') res.end('<html>oops');
        else res.end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'LLM SUMMARY: pool release guarded.' } }] }));
      });
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, requests };
  }

  it('posts a chat completion and returns the reply', async () => {
    const { baseUrl, requests } = await serve('ok');
    const s = createOpenAISummarizer({ baseUrl, model: 'qwen-local', apiKeyEnv: 'TEST_KEY', timeoutMs: 2000, maxTokens: 300, env: { TEST_KEY: 'sekret' } });
    const text = await s.summarize(inputOf(session(), { maxTokens: 200 }));
    expect(text).toBe('LLM SUMMARY: pool release guarded.');
    expect(s.stats).toMatchObject({ calls: 1, succeeded: 1, fallbacks: 0 });
    expect(requests).toHaveLength(1);
    expect(requests[0]!.url).toBe('/v1/chat/completions');
    expect(requests[0]!.auth).toBe('Bearer sekret');
    expect(requests[0]!.body['model']).toBe('qwen-local');
    expect(requests[0]!.body['max_tokens']).toBe(200);
    expect(JSON.stringify(requests[0]!.body['messages'])).toContain('config/pool.yaml');
  });

  for (const mode of ['slow', '500', 'malformed', 'not-json'] as const) {
    it(`falls back to extractive on a ${mode} reply and records it`, async () => {
      const { baseUrl, requests } = await serve(mode);
      const s = createOpenAISummarizer({ baseUrl, model: 'm', timeoutMs: mode === 'slow' ? 300 : 10_000, maxTokens: 300 });
      const input = inputOf(session(), { maxTokens: 300 });
      const text = await s.summarize(input);
      expect(text).toBe(extractiveSummary(input));
      expect(s.stats.fallbacks).toBe(1);
      expect(s.stats.succeeded).toBe(0);
      expect(s.stats.lastFallback).toMatch(mode === 'slow' ? /timed out/ : mode === '500' ? /HTTP 500/ : /malformed/);
      expect(requests).toHaveLength(1);
    });
  }

  it('falls back when nothing listens', async () => {
    const { baseUrl } = await serve('ok');
    await new Promise<void>((r) => servers.pop()!.close(() => r()));
    const s = createSummarizer({ kind: 'openai', baseUrl, model: 'm', timeoutMs: 1000, maxTokens: 100 });
    const input = inputOf(session());
    expect(await s.summarize(input)).toBe(extractiveSummary(input));
  });

  it('honours an outer abort signal: the request is given up and rejects with its reason (no fallback summary nobody reads)', async () => {
    const { baseUrl } = await serve('slow');
    const s = createOpenAISummarizer({ baseUrl, model: 'm', timeoutMs: 10_000, maxTokens: 100 });
    const ctl = new AbortController();
    const p = s.summarize(inputOf(session()), ctl.signal);
    ctl.abort(new Error('daemon closing'));
    await expect(p).rejects.toThrow('daemon closing');
    expect(s.stats.lastFallback).toBeUndefined();
  });
});

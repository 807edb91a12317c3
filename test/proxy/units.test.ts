import { describe, expect, it } from 'vitest';
import { anthropicFormat, openaiChatFormat, openaiResponsesFormat, parseListen, resolveProxyOptions, routeOf, sessionFromUserId, sessionHint, type ItemEdit } from '../../src/proxy/index.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { optionsFrom, type DaemonFlags } from '../../src/cli/daemon.js';
import { buildProgram } from '../../src/cli/program.js';
import { anthropicProblems, chatProblems, responsesProblems } from './validate.js';
import { startProxy } from './helpers.js';
import { randomBytes } from 'node:crypto';

describe('session matching', () => {
  it('reads the Claude Code header, both metadata.user_id forms, and the Codex ids', () => {
    const uuid = '5f1c2d3e-0000-4000-8000-00000000abcd';
    expect(sessionHint({ 'x-claude-code-session-id': uuid }, {})).toBe(uuid);
    expect(sessionFromUserId(JSON.stringify({ device_id: 'd', account_uuid: 'a', session_id: uuid }))).toBe(uuid);
    expect(sessionFromUserId(`user_abc123_account_def_session_${uuid}`)).toBe(uuid);
    expect(sessionHint({}, { metadata: { user_id: JSON.stringify({ session_id: uuid }) } })).toBe(uuid);
    expect(sessionHint({ session_id: 'codex-1' }, {})).toBe('codex-1');
    expect(sessionHint({}, { prompt_cache_key: 'codex-2' })).toBe('codex-2');
    // ids that could smuggle anything into a session name are ignored
    expect(sessionHint({ 'x-claude-code-session-id': '../../etc/passwd' }, {})).toBeUndefined();
    expect(sessionHint({}, {})).toBeUndefined();
  });

  it('routes paths to providers and formats', () => {
    expect(routeOf('/v1/messages?beta=true', {}).format?.name).toBe('anthropic');
    expect(routeOf('/v1/messages/count_tokens', {})).toEqual({ provider: 'anthropic', format: undefined });
    expect(routeOf('/v1/chat/completions', {}).format?.name).toBe('openai-chat');
    expect(routeOf('/v1/responses', {}).format?.name).toBe('openai-responses');
    expect(routeOf('/v1/models', { 'anthropic-version': '2023-06-01' }).provider).toBe('anthropic');
    expect(routeOf('/v1/models', {}).provider).toBe('openai');
  });
});

describe('proxy options', () => {
  it('parses listen addresses and rejects bad ones with the field name', () => {
    expect(parseListen('127.0.0.1:8787')).toEqual({ host: '127.0.0.1', port: 8787 });
    expect(parseListen('8787')).toEqual({ host: '127.0.0.1', port: 8787 });
    expect(parseListen('[::1]:9000')).toEqual({ host: '::1', port: 9000 });
    expect(() => parseListen('localhost')).toThrow(/proxy\.listen/);
    expect(() => parseListen('host:99999')).toThrow(/proxy\.listen/);
    expect(resolveProxyOptions(undefined, { idleTimeoutMs: 1, budgetTokens: undefined, reserveRatio: 0.15, hysteresis: 0.1 })).toBeUndefined();
  });

  it('merges --proxy and upstream flags over the config file field by field', () => {
    const o = optionsFrom({ proxy: '127.0.0.1:0', openaiUpstream: 'http://127.0.0.1:8000/v1', watch: ['/tmp'], socket: '/tmp/x.sock', state: '/tmp/s' }, {});
    expect(o.proxy?.port).toBe(0);
    expect(o.proxy?.upstreams).toEqual({ anthropic: 'https://api.anthropic.com', openai: 'http://127.0.0.1:8000/v1' });
    expect(optionsFrom({ watch: ['/tmp'], socket: '/tmp/x.sock', state: '/tmp/s' }, {}).proxy).toBeUndefined();
    expect(() => optionsFrom({ proxy: '127.0.0.1:0', anthropicUpstream: 'ftp://x', watch: ['/tmp'] }, {})).toThrow(/upstreams\.anthropic/);
  });

  it('refuses an upstream URL with credentials or a query string, without repeating them', () => {
    const secret = randomBytes(12).toString('hex');
    const base = { proxy: '127.0.0.1:0', watch: ['/tmp'], socket: '/tmp/x.sock', state: '/tmp/s' };
    const refusal = (flags: Partial<DaemonFlags>): string => {
      try {
        optionsFrom({ ...base, ...flags }, {});
      } catch (err) {
        return (err as Error).message;
      }
      return 'accepted';
    };
    const userinfo = refusal({ openaiUpstream: `http://user:${secret}@127.0.0.1:8000/v1` });
    expect(userinfo).toMatch(/upstreams\.openai.*credentials/);
    const query = refusal({ anthropicUpstream: `https://gateway.example/v1?api-key=${secret}` });
    expect(query).toMatch(/upstreams\.anthropic.*query string/);
    for (const m of [userinfo, query]) expect(m).not.toContain(secret);
    expect(optionsFrom({ ...base, openaiUpstream: 'http://127.0.0.1:8000/v1' }, {}).proxy?.upstreams.openai).toBe('http://127.0.0.1:8000/v1');
  });

  it('logs the upstreams without credentials or query string', async () => {
    const secret = randomBytes(12).toString('hex');
    // options built without the config schema, as an embedder could: the log line is safe anyway
    const h = await startProxy(`http://user:${secret}@127.0.0.1:9/v1?api-key=${secret}`);
    try {
      const listening = h.logs().split('\n').find((l) => l.includes('proxy listening')) ?? '';
      expect(listening).toContain('http://127.0.0.1:9/v1');
      expect(h.logs()).not.toContain(secret);
    } finally {
      await h.close();
    }
  });

  it('keeps the recall tool off unless --proxy-recall-tool or proxy.recallTool asks for it', () => {
    const base = { proxy: '127.0.0.1:0', watch: ['/tmp'], socket: '/tmp/x.sock', state: '/tmp/s' };
    expect(optionsFrom(base, {}).proxy?.recallTool).toBe(false);
    expect(optionsFrom({ ...base, proxyRecallTool: true }, {}).proxy?.recallTool).toBe(true);
    expect(resolveProxyOptions({ listen: '0', recallTool: true }, { idleTimeoutMs: 1, budgetTokens: undefined, reserveRatio: 0.15, hysteresis: 0.1 })?.recallTool).toBe(true);
  });

  it('--no-proxy-recall-tool turns off a recall tool the config file turns on; neither flag leaves the file in charge', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-flags-'));
    try {
      const config = join(dir, 'config.json');
      writeFileSync(config, JSON.stringify({ proxy: { listen: '127.0.0.1:0', recallTool: true } }));
      const recallTool = async (...args: string[]): Promise<boolean | undefined> => {
        const program = buildProgram();
        const daemon = program.commands.find((c) => c.name() === 'daemon');
        let flags: DaemonFlags | undefined;
        daemon?.action((f: DaemonFlags) => {
          flags = f;
        });
        await program.parseAsync(['node', 'contextd', 'daemon', '--config', config, '--watch', dir, '--socket', join(dir, 's.sock'), '--state', dir, ...args]);
        return flags && optionsFrom(flags, {}).proxy?.recallTool;
      };
      expect(await recallTool()).toBe(true);
      expect(await recallTool('--no-proxy-recall-tool')).toBe(false);
      expect(await recallTool('--proxy-recall-tool')).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const drop = (locs: string[], insertAt: string, text = 'SUMMARY [contextd recall h_0123456789abcdef]'): Map<string, ItemEdit> =>
  new Map(locs.map((l) => [l, l === insertAt ? { drop: true, insert: { role: 'assistant' as const, text } } : { drop: true }]));

describe('provider formats', () => {
  it('Anthropic: no edits render the same messages; a replaced call leaves its sibling and merges emptied turns', () => {
    const body = {
      model: 'claude-x',
      messages: [
        { role: 'user', content: 'do it' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'Read', input: { p: 1 } }, { type: 'tool_use', id: 'b', name: 'Read', input: { p: 2 } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: 'A' }, { type: 'tool_result', tool_use_id: 'b', content: 'B' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'c', name: 'Bash', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c', content: 'C' }, { type: 'text', text: 'more' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'done' }] },
        { role: 'user', content: 'next' },
      ],
    };
    expect(anthropicFormat.render(body, new Map())).toEqual(body);
    const p = anthropicFormat.parse(body);
    expect(p.items.map((i) => i.loc)).toEqual(['0', '1.0', '1.1', '2.0', '2.1', '3.0', '4.0', '4.1', '5.0', '6']);
    expect(p.protectedFrom).toBe(8);
    const one = anthropicFormat.render(body, drop(['1.0', '2.0'], '1.0'));
    expect(anthropicProblems(one)).toEqual([]);
    const both = anthropicFormat.render(body, drop(['1.0', '1.1', '2.0', '2.1', '3.0', '4.0'], '1.0'));
    expect(anthropicProblems(both)).toEqual([]);
    // the emptied user turn went and the summary merged with the next assistant turn
    expect((both['messages'] as unknown[]).length).toBe(5);
  });

  it('OpenAI chat: a replaced call leaves its sibling call; a replaced pair leaves a valid list', () => {
    const body = {
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'go' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } }, { id: 'b', type: 'function', function: { name: 'g', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'a', content: 'A' },
        { role: 'tool', tool_call_id: 'b', content: 'B' },
        { role: 'user', content: 'next' },
      ],
    };
    expect(openaiChatFormat.render(body, new Map())).toEqual(body);
    const out = openaiChatFormat.render(body, drop(['2.t0', '3'], '2.t0'));
    expect(chatProblems(out)).toEqual([]);
    expect((out['messages'] as { content: unknown }[])[2]?.content).toContain('SUMMARY');
    const all = openaiChatFormat.render(body, drop(['2.t0', '2.t1', '3', '4'], '2.t0'));
    expect(chatProblems(all)).toEqual([]);
  });

  it('OpenAI Responses: a reasoning item goes with the call that followed it', () => {
    const body = {
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'xx' },
        { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'out' },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'next' }] },
      ],
    };
    expect(openaiResponsesFormat.render(body, new Map())).toEqual(body);
    const out = openaiResponsesFormat.render(body, drop(['2', '3'], '2'));
    expect(responsesProblems(out)).toEqual([]);
    expect((out['input'] as { type: string }[]).map((i) => i.type)).toEqual(['message', 'message', 'message']);
  });
});

describe('a format\'s fingerprint without parsing', () => {
  const sys = 'You are a coding agent.';
  const cases = {
    anthropic: [
      { system: sys, messages: [{ role: 'user', content: 'fix the build' }] },
      { system: [{ type: 'text', text: sys }], messages: [{ role: 'user', content: [{ type: 'image', source: {} }, { type: 'text', text: 'see this' }] }] },
      { messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'x' }, { type: 'text', text: '<system-reminder>r</system-reminder>' }] }] },
      { system: '', messages: [{ role: 'assistant', content: 'hello' }, { role: 'user', content: [{ type: 'document', source: {} }] }] },
      { system: 'Another agent.', messages: [] },
    ],
    'openai-chat': [
      { messages: [{ role: 'system', content: sys }, { role: 'user', content: 'fix it' }, { role: 'developer', content: 'late rule' }] },
      { messages: [{ role: 'tool', content: 'x', tool_call_id: 'c' }, { content: [{ type: 'text', text: 'no role' }] }] },
      { messages: [{ role: 'assistant', content: 'hi' }, { role: 'user', content: '', tool_calls: [] }, { role: 'user', content: 'second' }] },
      { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] },
    ],
    'openai-responses': [
      { instructions: sys, input: 'a plain string prompt' },
      { instructions: sys, input: [{ type: 'message', role: 'developer', content: 'rules' }, { type: 'function_call_output', call_id: 'c', output: 'x' }, { role: 'user', content: [{ type: 'input_text', text: 'fix it' }] }] },
      { input: [{ type: 'reasoning', summary: [] }, { type: 'message', role: 'assistant', content: 'a' }] },
    ],
  } as const;
  const formats = { anthropic: anthropicFormat, 'openai-chat': openaiChatFormat, 'openai-responses': openaiResponsesFormat } as const;
  it.each(Object.keys(cases) as (keyof typeof cases)[])('%s: equals the parsed fingerprint for every shape of system prompt and first message', (name) => {
    const fingerprints = cases[name].map((body) => {
      const f = formats[name].fingerprint(body as Record<string, unknown>);
      expect(f).toBe(formats[name].parse(body as Record<string, unknown>).fingerprint);
      return f;
    });
    expect(new Set(fingerprints).size).toBe(fingerprints.length);
  });
});


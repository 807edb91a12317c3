import { afterEach, describe, expect, it } from 'vitest';
import { codingTask, startModelServer, type ModelServer } from './model-server/index.js';

const servers: ModelServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function start(lifetimeMs?: number): Promise<ModelServer> {
  const s = await startModelServer({ script: codingTask(), workspace: '/w', ...(lifetimeMs ? { lifetimeMs } : {}) });
  servers.push(s);
  return s;
}

async function post(s: ModelServer, path: string, body: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(`${s.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'secret' }, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text() };
}

const bash = [{ name: 'Bash', input_schema: {} }];

describe('scripted model server: Anthropic Messages', () => {
  it('plays the first step as SSE, then the next step for the result of that step', async () => {
    const s = await start();
    const first = await post(s, '/v1/messages', { model: 'm', stream: true, tools: bash, messages: [{ role: 'user', content: 'fix the calculator' }] });
    expect(first.status).toBe(200);
    expect(first.text).toContain('event: message_start');
    expect(first.text).toContain('"name":"Read"');
    expect(first.text).toContain('input_json_delta');
    const id = /"id":"(toolu_ctxd_[^"]+)"/.exec(first.text)?.[1];
    expect(id).toBeDefined();
    const second = await post(s, '/v1/messages', {
      model: 'm',
      tools: bash,
      messages: [
        { role: 'user', content: 'fix the calculator' },
        { role: 'assistant', content: [{ type: 'tool_use', id, name: 'Read', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'def add' }] },
      ],
    });
    const msg = JSON.parse(second.text) as { content: { type: string; input?: { command?: string } }[]; usage: { input_tokens: number } };
    expect(msg.content.find((b) => b.type === 'tool_use')?.input?.command).toBe('sh build.sh 1');
    expect(msg.usage.input_tokens).toBeGreaterThan(0);
    expect(s.requestsOf('main').map((r) => r.cursor)).toEqual([
      { turn: 1, step: 0 },
      { turn: 1, step: 1 },
    ]);
    expect(s.requests[0]?.headers['x-api-key']).toBeUndefined();
  });

  it('rejects an orphan tool_result and an unanswered tool_use with 400, like the real API', async () => {
    const s = await start();
    const orphan = await post(s, '/v1/messages', { model: 'm', tools: bash, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'x' }] }] });
    expect(orphan.status).toBe(400);
    expect(orphan.text).toContain('toolu_x');
    const unanswered = await post(s, '/v1/messages', {
      model: 'm',
      tools: bash,
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_y', name: 'Bash', input: {} }] },
        { role: 'user', content: 'next' },
      ],
    });
    expect(unanswered.status).toBe(400);
    expect(s.requestsOf('invalid')).toHaveLength(2);
  });

  it('answers the agent’s compaction request with the summary, and counts tokens', async () => {
    const s = await start();
    const r = await post(s, '/v1/messages', { model: 'm', tools: bash, messages: [{ role: 'user', content: 'Your task is to create a detailed summary of the conversation so far.' }] });
    expect(r.text).toContain('Summary: the user asked');
    const c = await post(s, '/v1/messages/count_tokens', { model: 'm', messages: [{ role: 'user', content: 'hello world' }] });
    expect(JSON.parse(c.text)).toEqual({ input_tokens: 2 });
    expect(s.requests.map((q) => q.kind)).toEqual(['compaction', 'count_tokens']);
  });
});

describe('scripted model server: OpenAI Responses', () => {
  it('streams a shell function call in the shape of the offered tool', async () => {
    const s = await start();
    const r = await post(s, '/v1/responses', { model: 'm', stream: true, tools: [{ type: 'function', name: 'shell' }], input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'fix it' }] }] });
    expect(r.text).toContain('event: response.completed');
    expect(r.text).toContain('"name":"shell"');
    expect(r.text).toContain("cat 'src/calc.txt'");
  });

  it('rejects an orphan function_call_output with 400', async () => {
    const s = await start();
    const r = await post(s, '/v1/responses', { model: 'm', tools: [{ type: 'function', name: 'shell' }], input: [{ type: 'function_call_output', call_id: 'call_zz', output: 'x' }] });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toMatchObject({ error: { type: 'invalid_request_error' } });
  });
});

describe('scripted model server: lifetime', () => {
  it('closes itself when its lifetime ends', async () => {
    const s = await start(200);
    await s.closed;
    await expect(fetch(`${s.url}/v1/messages`, { method: 'POST', body: '{}' })).rejects.toThrow();
  });
});

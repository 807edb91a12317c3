/**
 * The opt-in contextd_recall tool through a real proxy (real sockets, a real SQLite archive):
 * offered after the agent's tools, its calls answered from the archive in place of the agent's
 * own "unknown tool" result, the same way on every request, and off by default.
 */
import { describe, expect, it, vi } from 'vitest';
import type { ProviderFormatName } from '../../src/proxy/index.js';
import { canonicalJson } from '../../src/proxy/request.js';
import { FORMATS } from './agent.js';
import { proxyRig, type ProxyHarness } from './helpers.js';
import { anthropicProblems, chatProblems, responsesProblems } from './validate.js';

type Json = Record<string, unknown>;
const rig = proxyRig();
let h: ProxyHarness | undefined;

const ORIGINAL = 'build 3 ok after 412 modules; warning: module_77.c uses a deprecated flag -DLEVEL=9';
const GOOD = 'h_0123456789abcdef';
const MISSING = 'h_fedcba9876543210';
const GARBAGE = '../../etc/passwd';
const AGENT_ERROR = '<tool_use_error>Error: No such tool available: contextd_recall</tool_use_error>';

/** One recall call per handle, answered with the agent's own error; `extra` more turns after it. */
interface Shape {
  readonly format: ProviderFormatName;
  readonly path: string;
  readonly list: 'messages' | 'input';
  request(handles: readonly string[], extra: number): Json;
  /** The answer each call got in a forwarded body, by handle order. */
  answers(body: Json): string[];
  readonly problems: (b: Json) => string[];
}

const anthropic: Shape = {
  format: 'anthropic',
  path: '/v1/messages',
  list: 'messages',
  problems: anthropicProblems,
  request(handles, extra) {
    const messages: Json[] = [{ role: 'user', content: 'fix the build warnings' }];
    if (handles.length > 0) {
      messages.push({ role: 'assistant', content: [{ type: 'text', text: 'Recalling.' }, ...handles.map((handle, i) => ({ type: 'tool_use', id: `toolu_r${i}`, name: 'contextd_recall', input: { handle } }))] });
      messages.push({ role: 'user', content: handles.map((_, i) => ({ type: 'tool_result', tool_use_id: `toolu_r${i}`, is_error: true, content: AGENT_ERROR })) });
    }
    for (let k = 0; k < extra; k++) {
      messages.push({ role: 'assistant', content: [{ type: 'tool_use', id: `toolu_b${k}`, name: 'Bash', input: { command: `make ${k}` } }] });
      messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_b${k}`, content: `make ${k}: ok` }] });
    }
    return { model: 'claude-test', max_tokens: 1000, system: 'You are a coding agent.', tools: [{ name: 'Bash', description: 'run a command', input_schema: { type: 'object' } }], messages };
  },
  answers: (body) =>
    (body['messages'] as Json[]).flatMap((m) => (Array.isArray(m['content']) ? (m['content'] as Json[]) : [])).filter((b) => b['type'] === 'tool_result' && String(b['tool_use_id']).startsWith('toolu_r')).map((b) => {
      expect(b['is_error']).toBeUndefined();
      return String(b['content']);
    }),
};

const chat: Shape = {
  format: 'openai-chat',
  path: '/v1/chat/completions',
  list: 'messages',
  problems: chatProblems,
  request(handles, extra) {
    const messages: Json[] = [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'fix the build warnings' },
    ];
    if (handles.length > 0) {
      messages.push({ role: 'assistant', content: null, tool_calls: handles.map((handle, i) => ({ id: `call_r${i}`, type: 'function', function: { name: 'contextd_recall', arguments: JSON.stringify({ handle }) } })) });
      for (const [i] of handles.entries()) messages.push({ role: 'tool', tool_call_id: `call_r${i}`, content: 'Error: unknown tool contextd_recall' });
    }
    for (let k = 0; k < extra; k++) {
      messages.push({ role: 'assistant', content: null, tool_calls: [{ id: `call_b${k}`, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command: `make ${k}` }) } }] });
      messages.push({ role: 'tool', tool_call_id: `call_b${k}`, content: `make ${k}: ok` });
    }
    return { model: 'gpt-test', tools: [{ type: 'function', function: { name: 'bash', parameters: { type: 'object' } } }], messages };
  },
  answers: (body) => (body['messages'] as Json[]).filter((m) => m['role'] === 'tool' && String(m['tool_call_id']).startsWith('call_r')).map((m) => String(m['content'])),
};

const responses: Shape = {
  format: 'openai-responses',
  path: '/v1/responses',
  list: 'input',
  problems: responsesProblems,
  request(handles, extra) {
    const input: Json[] = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'fix the build warnings' }] }];
    for (const [i, handle] of handles.entries()) input.push({ type: 'function_call', name: 'contextd_recall', arguments: JSON.stringify({ handle }), call_id: `call_r${i}` });
    for (const [i] of handles.entries()) input.push({ type: 'function_call_output', call_id: `call_r${i}`, output: 'unsupported call: contextd_recall' });
    for (let k = 0; k < extra; k++) {
      input.push({ type: 'function_call', name: 'shell', arguments: JSON.stringify({ command: ['make', String(k)] }), call_id: `call_b${k}` });
      input.push({ type: 'function_call_output', call_id: `call_b${k}`, output: `make ${k}: ok` });
    }
    return { model: 'gpt-test', instructions: 'You are a coding agent.', stream: false, tools: [{ type: 'function', name: 'shell', parameters: { type: 'object' } }], input };
  },
  answers: (body) => (body['input'] as Json[]).filter((it) => it['type'] === 'function_call_output' && String(it['call_id']).startsWith('call_r')).map((it) => String(it['output'])),
};

const toolNames = (body: Json): string[] => (body['tools'] as Json[]).map((t) => String(t['name'] ?? (t['function'] as Json)['name']));

async function post(path: string, body: Json): Promise<Json> {
  const sent = JSON.stringify(body);
  const res = await fetch(`${(h as ProxyHarness).url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'sk-test' }, body: sent });
  expect(res.status).toBe(200);
  await res.text();
  return JSON.parse(rig.upstream.requests.at(-1)?.body ?? '{}') as Json;
}

describe.each([anthropic, chat, responses])('the contextd_recall tool ($format)', (shape) => {
  it('is off by default: no tool is added and the request is forwarded byte for byte', async () => {
    h = await rig.start();
    const body = shape.request([GOOD], 1);
    const sent = JSON.stringify(body);
    await post(shape.path, body);
    expect(rig.upstream.requests.at(-1)?.body).toBe(sent);
  });

  it('when on, leaves a request that offers no tools (a title or topic check) byte for byte', async () => {
    h = await rig.start({ recallTool: true });
    const { tools: _tools, ...body } = shape.request([], 1);
    const sent = JSON.stringify(body);
    await post(shape.path, body);
    expect(rig.upstream.requests.at(-1)?.body).toBe(sent);
  });

  it('answers calls from the archive in place of the agent\'s error, identically on every request, and garbage with a clear error', async () => {
    h = await rig.start({ recallTool: true });
    const first = await post(shape.path, shape.request([], 0));
    expect(toolNames(first)).toEqual([toolNames(shape.request([], 0))[0], 'contextd_recall']);
    const conversation = h.proxy.all()[0];
    expect(conversation).toBeDefined();
    // originals archived for this conversation (as a plan archives them), and one of another session
    h.archive.putMany([
      { handle: GOOD, sessionId: conversation?.id ?? '', reason: 'repeated-output', sectionIds: ['s3'], messages: [{ id: 'm1', role: 'tool', text: ORIGINAL }], tokens: 40, createdAt: 1 },
      { handle: MISSING, sessionId: 'someone-else', reason: 'repeated-output', sectionIds: ['s1'], messages: [{ id: 'm9', role: 'tool', text: 'not yours' }], tokens: 5, createdAt: 1 },
    ]);
    const second = await post(shape.path, shape.request([GOOD, GARBAGE, MISSING], 0));
    const [good, garbage, missing] = shape.answers(second);
    expect(good).toContain(`Originals archived under ${GOOD}`);
    expect(good).toContain(ORIGINAL);
    expect(garbage).toMatch(/is not a recall handle/);
    expect(missing).toContain(`no originals are archived under ${MISSING}`);
    expect(missing).not.toContain('not yours');
    expect(shape.problems(second)).toEqual([]);
    // the model was answered without a provider round trip: one upstream request per agent request
    expect(rig.upstream.requests).toHaveLength(2);
    // later requests carry the very same rewrite: the forwarded prefix is byte-identical
    const third = await post(shape.path, shape.request([GOOD, GARBAGE, MISSING], 2));
    const items = (b: Json): string[] => (b[shape.list] as unknown[]).map((m) => canonicalJson(m));
    expect(items(third).slice(0, items(second).length)).toEqual(items(second));
    expect(JSON.stringify(third['tools'])).toBe(JSON.stringify(second['tools']));
    expect(h.proxy.totals.cacheBreaks).toBe(0);
    // the section model counts what the model sees (the recalled originals), not the agent's error
    expect(conversation?.model.messages().some((m) => m.text.includes(ORIGINAL))).toBe(true);
  });
});

describe.each([anthropic, chat, responses])('a request with recall calls costs what it adds ($format)', (shape) => {
  it('is parsed once, and each archived answer is read from the archive once per conversation', async () => {
    h = await rig.start({ recallTool: true });
    await post(shape.path, shape.request([], 0));
    const id = h.proxy.all()[0]?.id ?? '';
    h.archive.putMany([{ handle: GOOD, sessionId: id, reason: 'repeated-output', sectionIds: ['s3'], messages: [{ id: 'm1', role: 'tool', text: ORIGINAL }], tokens: 40, createdAt: 1 }]);
    // spies on the real archive and the real format: they still do the work, and are counted
    const reads = vi.spyOn(h.archive, 'get');
    const parses = vi.spyOn(FORMATS[shape.format], 'parse');
    try {
      const answers: string[] = [];
      for (let extra = 0; extra < 4; extra++) answers.push(shape.answers(await post(shape.path, shape.request([GOOD, MISSING], extra)))[0] ?? '');
      expect(new Set(answers).size).toBe(1);
      expect(answers[0]).toContain(ORIGINAL);
      expect(parses).toHaveBeenCalledTimes(4);
      // GOOD once; MISSING (no answer worth keeping: it may be archived later) on every request
      expect(reads.mock.calls.filter(([handle]) => handle === GOOD)).toHaveLength(1);
      expect(reads.mock.calls.filter(([handle]) => handle === MISSING)).toHaveLength(4);
      expect(h.proxy.all()).toHaveLength(1);
    } finally {
      reads.mockRestore();
      parses.mockRestore();
    }
  });
});

describe('a recall answer larger than the room a plan frees', () => {
  it('is cut to hysteresis × window, deterministically, with a note naming the rest', async () => {
    h = await rig.start({ recallTool: true }, { budgetTokens: 4_000, hysteresis: 0.1 });
    await post(anthropic.path, anthropic.request([], 0));
    const id = h.proxy.all()[0]?.id ?? '';
    const bulky = Array.from({ length: 600 }, (_, i) => `line ${i}: compiling module_${i}.c -> build/obj/module_${i}.o`).join('\n');
    h.archive.putMany([{ handle: GOOD, sessionId: id, reason: 'bulky-output', sectionIds: ['s2'], messages: [{ id: 'm1', role: 'tool', text: bulky }], tokens: 9000, createdAt: 1 }]);
    const first = anthropic.answers(await post(anthropic.path, anthropic.request([GOOD], 0)))[0] ?? '';
    const again = anthropic.answers(await post(anthropic.path, anthropic.request([GOOD], 1)))[0] ?? '';
    expect(first).toBe(again);
    expect(first).toMatch(/\[… cut to about 400 of \d+ tokens to keep the request within its context budget; the rest stays archived: contextd recall h_0123456789abcdef\]$/);
    expect(first).toContain('line 0: compiling module_0.c');
    expect(first).not.toContain('line 599:');
  });
});

/**
 * The originals a proxied conversation hands on for harvest (`Prepared.fresh`) hold each
 * message once, known by what it says and where it sits, not by the chained request ids:
 * a tool list that changes mid-session (an MCP server connecting) or a system prompt edited
 * under the same conversation must not hand the whole history on again.
 */
import { describe, expect, it } from 'vitest';
import { createExtractiveSummarizer } from '../../src/compact/index.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import type { Message } from '../../src/model/messages.js';
import { Conversation } from '../../src/proxy/conversation.js';
import type { ProviderFormatName } from '../../src/proxy/index.js';
import { silentLogger } from '../../src/util/logger.js';
import { FORMATS, anthropicRequest, chatRequest, responsesRequest, scriptedTurns } from './agent.js';
import { proxyRig } from './helpers.js';

type Json = Record<string, unknown>;
const rig = proxyRig();
const turns = scriptedTurns(6, 5);
const MCP_TOOL = { name: 'mcp__docs__search', description: 'Search the docs', input_schema: { type: 'object' } };

const CASES: { format: ProviderFormatName; path: string; build: (k: number) => Json; withTool: (b: Json) => Json; withSystem: (b: Json, text: string) => Json }[] = [
  {
    format: 'anthropic',
    path: '/v1/messages',
    build: (k) => anthropicRequest(turns, k),
    withTool: (b) => ({ ...b, tools: [...(b['tools'] as Json[]), MCP_TOOL] }),
    withSystem: (b, text) => ({ ...b, system: text }),
  },
  {
    format: 'openai-chat',
    path: '/v1/chat/completions',
    build: (k) => chatRequest(turns, k),
    withTool: (b) => ({ ...b, tools: [...(b['tools'] as Json[]), { type: 'function', function: { name: MCP_TOOL.name, description: MCP_TOOL.description, parameters: MCP_TOOL.input_schema } }] }),
    withSystem: (b, text) => ({ ...b, messages: [{ role: 'system', content: text }, ...(b['messages'] as Json[]).slice(1)] }),
  },
  {
    format: 'openai-responses',
    path: '/v1/responses',
    build: (k) => responsesRequest(turns, k),
    withTool: (b) => ({ ...b, tools: [...(b['tools'] as Json[]), { type: 'function', name: MCP_TOOL.name, parameters: MCP_TOOL.input_schema }] }),
    withSystem: (b, text) => ({ ...b, instructions: text }),
  },
];

const texts = (ms: readonly Message[]): string[] => ms.map((m) => `${m.role}:${m.text}${(m.toolCalls ?? []).map((c) => c.arguments).join('')}`);

describe.each(CASES)('fresh originals of a proxied conversation ($format)', ({ format, path, build, withTool, withSystem }) => {
  it('a tool added mid-session hands on only the new messages, through the real proxy', async () => {
    const h = await rig.start();
    const fresh: Message[][] = [];
    h.proxy.on('request', (_c, p) => fresh.push([...p.fresh]));
    for (const body of [build(2), withTool(build(3))]) {
      const res = await fetch(`${h.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'sk-test' }, body: JSON.stringify(body) });
      expect(res.status).toBe(200);
      await res.text();
    }
    expect(h.proxy.all()).toHaveLength(1);
    const [first = [], second = []] = fresh;
    const all = FORMATS[format].parse(build(3)).items.filter((i) => i.message.role !== 'system').map((i) => i.message);
    expect(first.length).toBeGreaterThan(0);
    expect(texts([...first, ...second])).toEqual(texts(all));
  });

  it('a system prompt edited under the same conversation hands on only the new messages', async () => {
    const c = new Conversation('proxy-test', undefined, format, {
      tokenCounter: createTokenCounter('o200k_base'),
      summarizer: createExtractiveSummarizer(),
      archive: undefined,
      logger: silentLogger(),
      now: Date.now,
      budgetTokens: 200_000,
      reserveRatio: 0.15,
      hysteresis: 0.1,
    });
    const send = async (body: Json): Promise<Message[]> => [...(await c.prepare(FORMATS[format], FORMATS[format].parse(body), body)).fresh];
    const first = await send(build(2));
    const second = await send(withSystem(build(3), 'You are a careful coding agent (edited).'));
    const all = FORMATS[format].parse(build(3)).items.filter((i) => i.message.role !== 'system').map((i) => i.message);
    expect(texts([...first, ...second])).toEqual(texts(all));
    // the same history again: nothing new
    expect(await send(withSystem(build(3), 'Yet another system prompt.'))).toEqual([]);
  });
});

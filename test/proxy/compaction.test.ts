import { describe, expect, it } from 'vitest';
import type { ProviderFormatName } from '../../src/proxy/index.js';
import { canonicalJson } from '../../src/proxy/request.js';
import { handleFor } from '../../src/compact/index.js';
import type { Message } from '../../src/model/messages.js';
import { anthropicStream } from './upstream.js';
import { proxyRig } from './helpers.js';
import { anthropicRequest, chatRequest, responsesRequest, scriptedTurns, tokensOf } from './agent.js';
import { anthropicProblems, chatProblems, responsesProblems } from './validate.js';

const BUDGET = 40_000;
const RESERVE = 0.15;
const KEY = 'sk-test-proxy-CREDENTIAL-9f8e7d6c5b4a';
const rig = proxyRig();

const CASES: { format: ProviderFormatName; path: string; build: typeof anthropicRequest; problems: (b: Record<string, unknown>) => string[]; list: string }[] = [
  { format: 'anthropic', path: '/v1/messages', build: anthropicRequest, problems: anthropicProblems, list: 'messages' },
  { format: 'openai-chat', path: '/v1/chat/completions', build: chatRequest, problems: chatProblems, list: 'messages' },
  { format: 'openai-responses', path: '/v1/responses', build: responsesRequest, problems: responsesProblems, list: 'input' },
];

describe.each(CASES)('a long task through the proxy ($format)', ({ format, path, build, problems, list }) => {
  it('keeps every request within budget × (1 − reserve) once compaction starts, with valid tool pairs and a stable prefix', { timeout: 120_000 }, async () => {
    const h = await rig.start({}, { budgetTokens: BUDGET, reserveRatio: RESERVE });
    const upstream = rig.upstream;
    upstream.behave = () => ({ kind: 'sse', chunks: anthropicStream('next step') });
    const turns = scriptedTurns(70, 40);
    const limit = BUDGET * (1 - RESERVE);
    let compacting = false;
    let plans = 0;
    let prev: string[] | undefined;
    for (let k = 0; k <= turns.length; k++) {
      const sent = build(turns, k);
      const res = await fetch(`${h.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, 'x-api-key': KEY }, body: JSON.stringify(sent) });
      const text = await res.text();
      expect(res.status).toBe(200);
      expect(Buffer.from(text)).toEqual(upstream.sent[upstream.sent.length - 1]);
      const fwd = JSON.parse(upstream.requests[upstream.requests.length - 1]?.body ?? '{}') as Record<string, unknown>;
      const original = tokensOf(format, sent, BUDGET);
      const forwarded = tokensOf(format, fwd, BUDGET);
      if (forwarded < original) compacting = true;
      if (compacting) expect(forwarded, `request ${k}`).toBeLessThanOrEqual(limit);
      else expect(fwd).toEqual(sent);
      expect(problems(fwd), `request ${k}`).toEqual([]);
      // the goal and the newest exchange reach the model untouched
      expect(JSON.stringify(fwd)).toContain('the tokenizer drops the last line of input');
      const items = (fwd[list] as unknown[]).map((m) => canonicalJson(m));
      const sentItems = (sent[list] as unknown[]).map((m) => canonicalJson(m));
      expect(items[items.length - 1]).toBe(sentItems[sentItems.length - 1]);
      if (prev && !prev.every((m, i) => m === items[i])) plans++;
      prev = items;
    }
    expect(compacting).toBe(true);
    const totals = h.proxy.totals;
    expect(totals.plansApplied).toBeGreaterThan(0);
    // rewrites come in batches: far fewer cache breaks than requests, one per applied plan
    expect(plans).toBe(totals.plansApplied);
    expect(totals.cacheBreaks).toBe(totals.plansApplied);
    expect(totals.cacheBreaks * 100 / totals.requests).toBeLessThan(25);
    // summaries quote handles whose originals are archived
    const last = upstream.requests[upstream.requests.length - 1]?.body ?? '';
    const handles = [...last.matchAll(/\[contextd recall (h_[0-9a-f]{16})\]/g)].map((m) => m[1] as string);
    expect(handles.length).toBeGreaterThan(0);
    for (const handle of handles) {
      const archived = h.archive.get(handle);
      expect(archived?.messages.length).toBeGreaterThan(0);
      // exactly the originals the handle names (it hashes their ids): nothing else archived under it
      expect(archived && handleFor(archived.sessionId, archived.messages as readonly Message[])).toBe(handle);
    }
    // applied plans are logged with their numbers
    const planLogs = h.logs().split('\n').filter((l) => l.includes('"proxy plan applied"')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(planLogs).toHaveLength(totals.plansApplied);
    for (const l of planLogs) expect(l['tokensAfter']).toBeLessThan(l['tokensBefore'] as number);
    expect(h.everything()).not.toContain(KEY);
    expect(h.proxy.all()).toHaveLength(1);
  });
});

import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { readTranscriptFile } from '../../src/ingest/index.js';
import type { TranscriptEvent } from '../../src/model/messages.js';
import { corpusJsonlFiles, corpusPath, describeCorpus } from '../fixtures/corpus.js';
import { expectedFormat, jsonLines, messages } from './helpers.js';

type Obj = Record<string, unknown>;
const o = (v: unknown): Obj => (typeof v === 'object' && v !== null ? (v as Obj) : {});

const CLAUDE_03 = 'claude-code__iansherr_claude-code-log__03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl';
const CLAUDE_0D = 'claude-code__iansherr_claude-code-log__0d3a8e6f-290f-4105-a327-a2496e5e2a83.jsonl';
const CLAUDE_37 = 'claude-code__iansherr_claude-code-log__37f83ec9-f2ea-42a9-925e-0d5c105cb6e8.jsonl';
const CLAUDE_EF = 'claude-code__iansherr_claude-code-log__ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl';
const CLAUDE_AGENT = 'claude-code__iansherr_claude-code-log__agent-a4ca7529859c158c2.jsonl';
const CODEX = 'codex__AcidicSoil_codex-session-view__rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl';
const CODEX_LEGACY = 'codex-legacy__AcidicSoil_codex-session-viewer__example.jsonl';
const HERMES_03 = 'hermes__OcarCampos_hermes-backup__20260403_124133_eb7fe372.jsonl';
const HERMES_18 = 'hermes__OcarCampos_hermes-backup__20260418_204538_f8763f46.jsonl';
const HERMES_02 = 'hermes__OcarCampos_hermes-backup__20260502_105844_797426.jsonl';

const read = (name: string) => readTranscriptFile(corpusPath(name));
const raw = (name: string) => jsonLines(readFileSync(corpusPath(name), 'utf8'));

describeCorpus('every corpus transcript', () => {
  for (const name of corpusJsonlFiles()) {
    it(`${name} parses as ${expectedFormat(name)} with consistent pairing`, async () => {
      const r = await read(name);
      const rawLines = raw(name);
      expect(r.format).toBe(expectedFormat(name));
      expect(r.counts.lines).toBe(rawLines.length);
      expect(r.counts.malformedLines).toBe(0);
      expect(r.counts.oversizedLines).toBe(0);
      expect(r.events.some((e) => e.type === 'unknown' && e.lineType === 'adapter-error')).toBe(false);

      const msgs = messages(r.events);
      expect(msgs.length).toBeGreaterThan(10);
      // Stable, unique ids and byte offsets pointing at line starts.
      expect(new Set(msgs.map((m) => m.id)).size).toBe(msgs.length);
      const bytes = readFileSync(corpusPath(name));
      for (const m of msgs) {
        expect(m.sourceOffset).toBeTypeOf('number');
        expect(m.sourceOffset === 0 || bytes[(m.sourceOffset ?? 1) - 1] === 0x0a).toBe(true);
        expect(m.id.startsWith('L') ? m.id.startsWith(`L${m.sourceOffset}`) : true).toBe(true);
      }
      // Every result answers a call seen before it; results carry the call's tool name.
      const calls = new Map<string, string>();
      for (const m of msgs) {
        for (const c of m.toolCalls ?? []) calls.set(c.id, c.name);
        if (m.role === 'tool') {
          expect(m.toolCallId).toBeDefined();
          expect(calls.has(m.toolCallId ?? '')).toBe(true);
          expect(m.toolName).toBe(calls.get(m.toolCallId ?? ''));
        }
      }
      // No opaque blobs in text: PNG base64, Codex encrypted_content, Claude signatures.
      for (const m of msgs) {
        const text = `${m.text}\n${m.reasoning ?? ''}`;
        expect(text).not.toMatch(/iVBORw0KGgo|gAAAAAB[A-Za-z0-9_-]{40}|"signature"/);
      }
    });
  }
});

describeCorpus('claude-code corpus', () => {
  it('emits one usage event per API message id, valued from its first line', async () => {
    for (const name of corpusJsonlFiles().filter((n) => n.startsWith('claude-code'))) {
      const r = await read(name);
      const firstUsage = new Map<string, number>();
      for (const line of raw(name)) {
        if (line['type'] !== 'assistant') continue;
        const msg = o(line['message']);
        const u = o(msg['usage']);
        const id = msg['id'];
        if (typeof id !== 'string' || firstUsage.has(id) || msg['usage'] === undefined) continue;
        const n = (k: string) => (typeof u[k] === 'number' ? (u[k] as number) : 0);
        firstUsage.set(id, n('input_tokens') + n('cache_creation_input_tokens') + n('cache_read_input_tokens') + n('output_tokens'));
      }
      const usage = r.events.filter((e): e is Extract<TranscriptEvent, { type: 'usage' }> => e.type === 'usage');
      expect(usage.length, name).toBe(firstUsage.size);
      expect(usage.map((u) => u.contextTokens).sort((a, b) => a - b)).toEqual([...firstUsage.values()].sort((a, b) => a - b));
    }
  });

  it('reports every is_error tool result, and splits multi-block lines by block index', async () => {
    const r = await read(CLAUDE_37);
    let rawErrors = 0;
    for (const line of raw(CLAUDE_37)) {
      const content = o(line['message'])['content'];
      if (Array.isArray(content)) for (const b of content) if (o(b)['type'] === 'tool_result' && o(b)['is_error'] === true) rawErrors++;
    }
    expect(rawErrors).toBe(21);
    expect(messages(r.events).filter((m) => m.role === 'tool' && m.isError === true)).toHaveLength(rawErrors);

    const img = await read(CLAUDE_0D);
    const withImage = messages(img.events).filter((m) => (m.imageCount ?? 0) > 0);
    expect(withImage).toHaveLength(1);
    expect(withImage[0]?.id).toMatch(/#0$/);
    expect(withImage[0]?.text).toBe('');
    const sibling = messages(img.events).find((m) => m.id === withImage[0]?.id.replace(/#0$/, '#1'));
    expect(sibling?.text).toMatch(/inline/);
    // The ~1 MB base64 line contributes no text.
    expect(messages(img.events).reduce((n, m) => n + m.text.length, 0)).toBeLessThan(400_000);
    // Thinking becomes reasoning on an empty assistant message.
    const thinking = messages(img.events).filter((m) => m.reasoning !== undefined);
    expect(thinking.length).toBeGreaterThan(0);
    for (const m of thinking) expect(m).toMatchObject({ role: 'assistant', text: '' });
    // Interrupts and local-command echoes are injected user content.
    const interrupts = messages(img.events).filter((m) => m.text.startsWith('[Request interrupted by user'));
    expect(interrupts.length).toBe(3);
    for (const m of interrupts) expect(m).toMatchObject({ role: 'user', injected: true });
    expect(messages(img.events).find((m) => m.text.startsWith('Hey Claude'))?.injected).toBeUndefined();
  });

  it('turns the rewind in 03eb5929 into one truncate back to the last message before the branch point', async () => {
    const r = await read(CLAUDE_03);
    const truncates = r.events.filter((e) => e.type === 'truncate');
    expect(truncates).toEqual([{ type: 'truncate', keepThroughId: '3220c04b-b0dc-48b5-845b-3c1c10f6a684', reason: 'branch' }]);
    const i = r.events.findIndex((e) => e.type === 'truncate');
    const next = r.events[i + 1];
    expect(next?.type === 'message' && next.message.text.startsWith("I actually don't like much this idea")).toBe(true);
    // The kept message is the assistant text right before the abandoned branch.
    expect(messages(r.events).find((m) => m.id === '3220c04b-b0dc-48b5-845b-3c1c10f6a684')?.role).toBe('assistant');
  });

  it('does not read parallel tool results or out-of-order hook lines as branches (ef958aa1)', async () => {
    const r = await read(CLAUDE_EF);
    expect(r.events.filter((e) => e.type === 'truncate')).toEqual([]);
    expect(r.events.filter((e) => e.type === 'turn-end')).toHaveLength(2);
    const meta = r.events.filter((e) => e.type === 'meta').map((e) => (e.type === 'meta' ? e.meta : {}));
    expect(meta.some((m) => m.model === 'claude-opus-4-7')).toBe(true);
    expect(meta.some((m) => m.sessionId === 'ef958aa1-0e93-49f0-bb71-150f63befcd1')).toBe(true);
    // Context-bearing attachments (hook additional context, skill listing) are injected messages.
    const injected = messages(r.events).filter((m) => m.injected === true);
    expect(injected.some((m) => m.text.includes('clmail 6.0.10 session registered'))).toBe(true);
  });

  it('reads a subagent file (all sidechain lines) whole', async () => {
    const r = await read(CLAUDE_AGENT);
    const msgs = messages(r.events);
    expect(r.events.some((e) => e.type === 'unknown')).toBe(false);
    expect(msgs[0]?.role).toBe('user');
    expect(msgs.filter((m) => m.role === 'tool')).toHaveLength(24);
    expect(msgs.filter((m) => m.isError === true)).toHaveLength(1);
    expect(r.events.filter((e) => e.type === 'turn-end')).toHaveLength(1);
  });
});

describeCorpus('codex corpus', () => {
  it('renders user text once (response items only) and marks the environment context injected', async () => {
    const r = await read(CODEX);
    const lines = raw(CODEX);
    const prompts = lines.filter((l) => l['type'] === 'event_msg' && o(l['payload'])['type'] === 'user_message').map((l) => String(o(l['payload'])['message']));
    expect(prompts).toHaveLength(1);
    const users = messages(r.events).filter((m) => m.role === 'user');
    expect(users.filter((m) => m.text.trim() === prompts[0]?.trim())).toHaveLength(1);
    expect(users.filter((m) => m.injected === true).map((m) => m.text.slice(0, 21))).toEqual(['<environment_context>']);
    // Assistant-side reasoning only from response items (38 items, one with an empty summary).
    expect(messages(r.events).filter((m) => m.reasoning !== undefined)).toHaveLength(37);
  });

  it('reports meta, deduplicated usage and exit-code errors', async () => {
    const r = await read(CODEX);
    const lines = raw(CODEX);
    const meta = Object.assign({}, ...r.events.map((e) => (e.type === 'meta' ? e.meta : {}))) as Obj;
    expect(meta).toMatchObject({ sessionId: '019a93b9-f380-7600-98ff-940e6b99603c', cwd: '/home/user/projects/temp/chatbot-ui', model: 'gpt-5.1-codex' });
    expect(String(meta['repo'])).toMatch(/github\.com/);
    const infos = new Set(
      lines.filter((l) => o(l['payload'])['type'] === 'token_count' && o(l['payload'])['info'] !== null).map((l) => JSON.stringify(o(o(l['payload'])['info'])['total_token_usage'])),
    );
    const usage = r.events.filter((e) => e.type === 'usage');
    expect(usage).toHaveLength(infos.size);
    const lastInfo = o(o(lines.filter((l) => o(l['payload'])['type'] === 'token_count').at(-1)?.['payload'])['info']);
    const last = o(lastInfo['last_token_usage']);
    expect(usage.at(-1)).toMatchObject({ contextTokens: Number(last['input_tokens']) + Number(last['output_tokens']) });
    if (typeof lastInfo['model_context_window'] === 'number') expect(meta['contextWindow']).toBe(lastInfo['model_context_window']);

    const failing = lines.filter((l) => o(l['payload'])['type'] === 'function_call_output' && /"exit_code":[1-9]/.test(String(o(l['payload'])['output']))).length;
    expect(failing).toBe(3);
    expect(messages(r.events).filter((m) => m.isError === true)).toHaveLength(failing);
    // Outputs are unwrapped from their {"output","metadata"} JSON.
    const first = messages(r.events).find((m) => m.role === 'tool');
    expect(first?.text.startsWith('LM Studio configuration.md')).toBe(true);
    expect(first?.toolName).toBe('shell');
  });

  it('parses the legacy shape: header meta, instructions once, bare items, sandbox refusals as errors', async () => {
    const r = await read(CODEX_LEGACY);
    const lines = raw(CODEX_LEGACY);
    expect(r.events.some((e) => e.type === 'meta' && e.meta.sessionId === 'cf4def41-21e0-4b91-adb4-5397c1492084')).toBe(true);
    const msgs = messages(r.events);
    const instructions = msgs.filter((m) => m.text.includes('Instruction Loading Model (Extended)'));
    expect(instructions).toHaveLength(1);
    expect(instructions[0]).toMatchObject({ role: 'user', injected: true });
    expect(msgs.filter((m) => m.role === 'user')).toHaveLength(lines.filter((l) => l['type'] === 'message' && l['role'] === 'user').length);
    expect(msgs.filter((m) => m.role === 'tool')).toHaveLength(246);
    const refusals = msgs.filter((m) => m.role === 'tool' && m.text.startsWith('failed in sandbox'));
    expect(refusals.length).toBeGreaterThan(0);
    for (const m of refusals) expect(m.isError).toBe(true);
    // MCP content arrays are flattened to their text.
    expect(msgs.find((m) => m.toolName === 'task-master-ai__next_task')?.text.startsWith('{\n  "data"')).toBe(true);
  });
});

describeCorpus('hermes corpus (openai-chat)', () => {
  it('keeps session_meta out of the messages except one tool-definition system message', async () => {
    const r18 = await read(HERMES_18);
    const metaLines = raw(HERMES_18).filter((l) => l['role'] === 'session_meta');
    expect(metaLines).toHaveLength(3);
    const system = messages(r18.events).filter((m) => m.role === 'system');
    expect(system).toHaveLength(1);
    expect(system[0]?.text).toContain('browser_back');
    expect(r18.events.find((e) => e.type === 'meta')).toMatchObject({ meta: { model: expect.any(String) } });
    const r02 = await read(HERMES_02);
    expect(messages(r02.events).filter((m) => m.role === 'system')).toHaveLength(0);
  });

  it('reads naive timestamps as UTC, flags tool errors, compaction summaries and turn ends', async () => {
    const r = await read(HERMES_03);
    const first = messages(r.events).find((m) => m.role === 'user');
    expect(first?.timestamp).toBe(Date.UTC(2026, 3, 3, 12, 41, 46, 92));
    const lines = raw(HERMES_03);
    expect(r.events.filter((e) => e.type === 'turn-end')).toHaveLength(lines.filter((l) => l['finish_reason'] === 'stop').length);
    const failedFlag = lines.filter((l) => l['role'] === 'tool' && /"success": false/.test(String(l['content']))).length;
    expect(failedFlag).toBeGreaterThan(0);
    const errors = messages(r.events).filter((m) => m.isError === true);
    expect(errors.filter((m) => m.text.includes('"success": false'))).toHaveLength(failedFlag);
    for (const m of errors) expect(m.role).toBe('tool');
    expect(messages(r.events).filter((m) => m.role === 'tool' && m.text.startsWith('{"output": "SKILL.md", "exit_code": 0, "error": null}'))).not.toHaveLength(0);
    for (const m of messages(r.events).filter((x) => x.text.startsWith('{"output": "SKILL.md", "exit_code": 0'))) expect(m.isError).toBeUndefined();

    const r02 = await read(HERMES_02);
    const summaries = messages(r02.events).filter((m) => m.isSummary === true);
    expect(summaries).toHaveLength(1);
    expect(summaries[0]?.text.startsWith('[CONTEXT COMPACTION')).toBe(true);
    expect(messages(r02.events).find((m) => m.text.includes('"success": false') && m.text.includes('429'))?.isError).toBe(true);
  });
});

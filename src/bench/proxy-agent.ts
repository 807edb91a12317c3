/**
 * A scripted agent for the proxy benchmark and tests: it keeps its own full history (as Claude
 * Code or Codex do) and sends all of it on every request, in the chosen provider's format, with
 * a bulky tool output per turn.
 */
import { seededRandom } from '../util/random.js';

const WORDS = 'alpha beta gamma delta parser module config request handler socket buffer stream token budget section summary archive cache index vector matrix render layout widget client server router session window reserve compact planner detector score recency density relevance anchor pending result output error trace frame stack line column value field record entry'.split(' ');

/** A tool output of about `lines` lines of seeded text (≈ 12 tokens a line). */
export function bulkyOutput(seed: number, lines: number): string {
  const rnd = seededRandom(seed);
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    const n = 8 + Math.floor(rnd() * 6);
    const ws: string[] = [];
    for (let j = 0; j < n; j++) ws.push(WORDS[Math.floor(rnd() * WORDS.length)] as string);
    out.push(`${String(i + 1).padStart(4, ' ')}  ${ws.join(' ')} ${Math.floor(rnd() * 100000)}`);
  }
  return out.join('\n');
}

export interface Turn {
  readonly text: string;
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly output: string;
}

/** The scripted task: read files, run tests; some files are read twice (stale reads). */
export function scriptedTurns(n: number, linesPerOutput = 100): Turn[] {
  const turns: Turn[] = [];
  for (let i = 0; i < n; i++) {
    const file = `src/module${i % 7}.ts`;
    turns.push(
      i % 3 === 2
        ? { text: `Running the tests again after change ${i}.`, tool: 'Bash', args: { command: `npm test -- --grep case${i}` }, output: bulkyOutput(1000 + i, linesPerOutput) }
        : { text: `Reading ${file} to find the parser bug (step ${i}).`, tool: 'Read', args: { file_path: file }, output: bulkyOutput(i % 7, linesPerOutput) },
    );
  }
  return turns;
}

const SYSTEM = 'You are a coding agent. Use the tools to fix the bug the user describes. Keep answers short.';
const GOAL = 'Fix the parser bug in src/module3.ts: the tokenizer drops the last line of input. Then run the tests.';
const TOOLS_ANTHROPIC = [
  { name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] } },
  { name: 'Bash', description: 'Run a command', input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } },
];

/** The Anthropic request the agent sends after `k` completed turns (cache_control on the last block, as Claude Code does). */
export function anthropicRequest(turns: readonly Turn[], k: number, sessionId = '5f1c2d3e-0000-4000-8000-00000000abcd'): Record<string, unknown> {
  const messages: Record<string, unknown>[] = [{ role: 'user', content: [{ type: 'text', text: GOAL }] }];
  for (let i = 0; i < k; i++) {
    const t = turns[i] as Turn;
    messages.push({ role: 'assistant', content: [{ type: 'text', text: t.text }, { type: 'tool_use', id: `toolu_${i}`, name: t.tool, input: t.args }] });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${i}`, content: t.output }] });
  }
  const last = messages[messages.length - 1] as { content: Record<string, unknown>[] };
  last.content = last.content.map((b, j) => (j === last.content.length - 1 ? { ...b, cache_control: { type: 'ephemeral' } } : b));
  return { model: 'claude-test', max_tokens: 1024, stream: true, system: [{ type: 'text', text: SYSTEM, cache_control: { type: 'ephemeral' } }], tools: TOOLS_ANTHROPIC, metadata: { user_id: JSON.stringify({ device_id: 'd1', session_id: sessionId }) }, messages };
}

/** The Chat Completions request after `k` turns. */
export function chatRequest(turns: readonly Turn[], k: number): Record<string, unknown> {
  const messages: Record<string, unknown>[] = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: GOAL },
  ];
  for (let i = 0; i < k; i++) {
    const t = turns[i] as Turn;
    messages.push({ role: 'assistant', content: t.text, tool_calls: [{ id: `call_${i}`, type: 'function', function: { name: t.tool, arguments: JSON.stringify(t.args) } }] });
    messages.push({ role: 'tool', tool_call_id: `call_${i}`, content: t.output });
  }
  return { model: 'gpt-test', stream: true, messages, tools: TOOLS_ANTHROPIC.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.input_schema } })) };
}

/** The Responses request after `k` turns (Codex style: reasoning before each call). */
export function responsesRequest(turns: readonly Turn[], k: number): Record<string, unknown> {
  const input: Record<string, unknown>[] = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: GOAL }] }];
  for (let i = 0; i < k; i++) {
    const t = turns[i] as Turn;
    input.push({ type: 'reasoning', summary: [{ type: 'summary_text', text: t.text }] });
    input.push({ type: 'function_call', call_id: `call_${i}`, name: t.tool === 'Bash' ? 'shell' : 'read_file', arguments: JSON.stringify(t.args) });
    input.push({ type: 'function_call_output', call_id: `call_${i}`, output: t.output });
  }
  return { model: 'gpt-test', instructions: SYSTEM, stream: true, prompt_cache_key: '0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000', input, tools: TOOLS_ANTHROPIC.map((t) => ({ type: 'function', name: t.name, parameters: t.input_schema })) };
}

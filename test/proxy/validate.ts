/**
 * What providers reject, checked on forwarded bodies: orphaned tool calls or results,
 * empty messages, and (Anthropic) results that do not open the next user message.
 */
type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Problems of an Anthropic Messages body; empty when the API would accept its structure. */
export function anthropicProblems(body: Obj): string[] {
  const problems: string[] = [];
  const messages = (body['messages'] as unknown[]).filter(isObj);
  if (messages[0]?.['role'] !== 'user') problems.push('first message is not a user message');
  messages.forEach((m, i) => {
    const content = m['content'];
    const blocks = typeof content === 'string' ? [{ type: 'text', text: content }] : (content as Obj[]);
    if (blocks.length === 0 || (typeof content === 'string' && content.length === 0)) problems.push(`message ${i} is empty`);
    if (i > 0 && messages[i - 1]?.['role'] === m['role']) problems.push(`messages ${i - 1} and ${i} have the same role`);
    if (m['role'] === 'assistant') {
      const uses = blocks.filter((b) => b['type'] === 'tool_use').map((b) => b['id'] as string);
      if (uses.length === 0) return;
      const next = messages[i + 1];
      const nextBlocks = next && Array.isArray(next['content']) ? (next['content'] as Obj[]) : [];
      const results = new Set(nextBlocks.filter((b) => b['type'] === 'tool_result').map((b) => b['tool_use_id'] as string));
      for (const id of uses) if (!results.has(id) && i + 1 < messages.length) problems.push(`tool_use ${id} has no result in the next message`);
    } else {
      const results = blocks.filter((b) => b['type'] === 'tool_result');
      const prev = messages[i - 1];
      const prevUses = new Set(prev && Array.isArray(prev['content']) ? (prev['content'] as Obj[]).filter((b) => b['type'] === 'tool_use').map((b) => b['id'] as string) : []);
      for (const r of results) if (!prevUses.has(r['tool_use_id'] as string)) problems.push(`tool_result ${String(r['tool_use_id'])} answers no tool_use of the previous message`);
      const firstOther = blocks.findIndex((b) => b['type'] !== 'tool_result');
      const lastResult = blocks.map((b) => b['type']).lastIndexOf('tool_result');
      if (firstOther !== -1 && lastResult > firstOther) problems.push(`message ${i}: text before a tool_result`);
    }
  });
  return problems;
}

/** Problems of an OpenAI Chat Completions body. */
export function chatProblems(body: Obj): string[] {
  const problems: string[] = [];
  const messages = (body['messages'] as unknown[]).filter(isObj);
  const open = new Set<string>();
  messages.forEach((m, i) => {
    if (m['role'] === 'assistant') {
      const calls = Array.isArray(m['tool_calls']) ? (m['tool_calls'] as Obj[]) : [];
      if (calls.length === 0 && (m['content'] === null || m['content'] === '' || m['content'] === undefined)) problems.push(`message ${i} is empty`);
      if (open.size > 0) problems.push(`calls ${[...open].join(',')} have no result before message ${i}`);
      open.clear();
      for (const c of calls) open.add(c['id'] as string);
    } else if (m['role'] === 'tool') {
      const id = m['tool_call_id'] as string;
      if (!open.has(id)) problems.push(`tool message ${i} answers no open call ${id}`);
      open.delete(id);
    } else if (open.size > 0) problems.push(`calls ${[...open].join(',')} have no result before message ${i}`);
  });
  return problems;
}

/** Problems of an OpenAI Responses body. */
export function responsesProblems(body: Obj): string[] {
  const problems: string[] = [];
  const input = Array.isArray(body['input']) ? (body['input'] as unknown[]).filter(isObj) : [];
  const calls = new Set(input.filter((it) => it['type'] === 'function_call').map((it) => it['call_id'] as string));
  const outputs = new Set(input.filter((it) => it['type'] === 'function_call_output').map((it) => it['call_id'] as string));
  for (const id of outputs) if (!calls.has(id)) problems.push(`function_call_output ${id} without its call`);
  const last = input[input.length - 1];
  for (const id of calls) if (!outputs.has(id) && !(last?.['type'] === 'function_call' && last['call_id'] === id)) problems.push(`function_call ${id} without its output`);
  input.forEach((it, i) => {
    if (it['type'] === 'reasoning' && input[i + 1] === undefined) problems.push(`reasoning item ${i} ends the input`);
  });
  return problems;
}

/** Measuring helpers over the scripted agent of src/bench/proxy-agent.ts. */
import { SessionModel } from '../../src/model/index.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { anthropicFormat, openaiChatFormat, openaiResponsesFormat, type ProviderFormatName } from '../../src/proxy/index.js';

export { anthropicRequest, chatRequest, responsesRequest, scriptedTurns, bulkyOutput } from '../../src/bench/proxy-agent.js';

export const FORMATS = { anthropic: anthropicFormat, 'openai-chat': openaiChatFormat, 'openai-responses': openaiResponsesFormat } as const;

const base = createTokenCounter('o200k_base');
const memo = new Map<string, number>();
/** The real tiktoken counter, memoized: the test re-measures the same texts on every request. */
const counter = {
  encoding: base.encoding,
  count(text: string): number {
    let n = memo.get(text);
    if (n === undefined) memo.set(text, (n = base.count(text)));
    return n;
  },
};

/** Tokens of a body as the section model counts them (what the budget bounds). */
export function tokensOf(format: ProviderFormatName, body: Record<string, unknown>, budgetTokens: number): number {
  const model = new SessionModel({ sessionId: 'measure', tokenCounter: counter, budgetTokens });
  for (const it of FORMATS[format].parse(body).items) model.apply({ type: 'message', message: it.message });
  return model.tokens();
}

/**
 * The context budget (design §4): window size, reserve and where the size came from.
 *
 * Precedence of `total`: the `budgetTokens` option (config / CLI) → the window the agent itself
 * reported (Codex `model_context_window`) → a preset looked up by model name → 128k.
 */
import type { Budget } from './types.js';

export const DEFAULT_CONTEXT_WINDOW = 128_000;
export const DEFAULT_RESERVE_RATIO = 0.15;

/**
 * Context windows by model name, first match wins. Values are input context windows as the
 * vendors document them (model cards / API docs, as of late 2025):
 * Anthropic "models overview" (200k; Sonnet 4/4.5 and Opus 4.6 1M with the `[1m]` beta suffix
 * that Claude Code writes), OpenAI model pages (GPT-4o 128k, GPT-4.1 1,047,576, GPT-5 400k,
 * GPT-5-Codex 272k as Codex CLI reports it, o1/o3/o4-mini 200k), Google (Gemini 1,048,576;
 * 1.5 Pro 2M), MiniMax (M2 204,800), DeepSeek V3/R1 (128k), Meta Llama 3.1+ (128k),
 * Qwen 2.5/3 (128k; Qwen3-Coder 256k), Mistral Large (128k), Codestral (256k), xAI Grok 4 (256k),
 * Moonshot Kimi K2 (128k), Zhipu GLM-4.5/4.6 (128k/200k).
 */
const PRESETS: ReadonlyArray<readonly [RegExp, number]> = [
  [/claude.*\[1m\]/, 1_000_000],
  [/claude|anthropic|opus|sonnet|haiku/, 200_000],
  [/gpt-5.*codex|codex-mini/, 272_000],
  [/gpt-5/, 400_000],
  [/gpt-4\.1/, 1_047_576],
  [/gpt-4o|chatgpt-4o|gpt-4-turbo|gpt-4\.5/, 128_000],
  [/gpt-4-32k/, 32_768],
  [/gpt-4/, 8_192],
  [/gpt-3\.5/, 16_385],
  [/gpt-oss/, 131_072],
  [/^(?:openai\/)?o1-mini/, 128_000],
  [/^(?:openai\/)?o[134](?:-|$)/, 200_000],
  [/gemini-1\.5-pro/, 2_097_152],
  [/gemini/, 1_048_576],
  [/minimax/, 204_800],
  [/deepseek/, 128_000],
  [/llama-?3|llama3/, 128_000],
  [/qwen3-coder/, 262_144],
  [/qwen|qwq/, 128_000],
  [/codestral/, 256_000],
  [/mistral|mixtral|magistral|devstral/, 128_000],
  [/grok/, 256_000],
  [/kimi/, 128_000],
  [/glm-4\.6/, 200_000],
  [/glm/, 128_000],
];

/** The preset context window for a model name, or undefined when the name is unknown. */
export function presetContextWindow(model: string | undefined): number | undefined {
  if (!model) return undefined;
  const m = model.toLowerCase().trim();
  for (const [re, n] of PRESETS) if (re.test(m)) return n;
  return undefined;
}

export interface BudgetInputs {
  readonly budgetTokens?: number | undefined;
  readonly reportedContextWindow?: number | undefined;
  readonly model?: string | undefined;
  readonly reserveRatio: number;
}

function positive(n: number | undefined): n is number {
  return n !== undefined && Number.isFinite(n) && n > 0;
}

/** Resolves the budget by the precedence above. */
export function resolveBudget(inputs: BudgetInputs): Budget {
  const reserveRatio = inputs.reserveRatio;
  if (positive(inputs.budgetTokens)) return { total: inputs.budgetTokens, reserveRatio, source: 'config' };
  if (positive(inputs.reportedContextWindow)) return { total: inputs.reportedContextWindow, reserveRatio, source: 'reported' };
  const preset = presetContextWindow(inputs.model);
  if (preset !== undefined) return { total: preset, reserveRatio, source: 'preset' };
  return { total: DEFAULT_CONTEXT_WINDOW, reserveRatio, source: 'default' };
}

/**
 * A summarizer calling an OpenAI-compatible `/chat/completions` endpoint (llama.cpp, Ollama,
 * vLLM …). Any failure — network error, timeout, non-2xx, malformed reply — falls back to the
 * extractive summary and is counted in `stats`. It is async and never on the ingest path.
 */
import type { Message } from '../../model/messages.js';
import { describeError } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';
import { clip } from '../../text/index.js';
import type { Summarizer, SummarizeInput } from '../types.js';
import { DEFAULT_SUMMARY_TOKENS, extractiveSummary } from './extractive.js';

export interface OpenAISummarizerConfig {
  /** e.g. `http://127.0.0.1:8080/v1` */
  readonly baseUrl: string;
  readonly model: string;
  /** Name of the environment variable holding the API key (optional for local servers). */
  readonly apiKeyEnv?: string;
  readonly timeoutMs: number;
  readonly maxTokens: number;
  /** Environment to read the key from (default `process.env`). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Max characters of transcript sent in one request (default 24 000). */
  readonly maxInputChars?: number;
  /** Fallbacks are logged at warn level. */
  readonly logger?: Logger;
}

export interface SummarizerStats {
  calls: number;
  succeeded: number;
  fallbacks: number;
  /** Why the last fallback happened. */
  lastFallback?: string;
}

export interface OpenAISummarizer extends Summarizer {
  readonly stats: Readonly<SummarizerStats>;
}

const SYSTEM_PROMPT =
  'You compress part of an AI coding agent\'s context. Write a terse factual summary of the excerpt: ' +
  'keep every instruction and constraint, file paths, commands and their outcome, exact error lines, ' +
  'config values (key=value) and the conclusion reached. No preamble, no speculation.';

function renderMessage(m: Message): string {
  const parts = [`[${m.role}${m.toolName ? `:${m.toolName}` : ''}${m.isError ? ' error' : ''}]`];
  if (m.reasoning) parts.push(`(thinking) ${m.reasoning}`);
  if (m.text) parts.push(m.text);
  for (const c of m.toolCalls ?? []) parts.push(`call ${c.name} ${c.arguments}`);
  return parts.join('\n');
}

/** The request body sent for one input (exported for tests). */
export function buildRequest(cfg: OpenAISummarizerConfig, input: SummarizeInput): Record<string, unknown> {
  const transcript = clip(input.messages.map(renderMessage).join('\n\n'), cfg.maxInputChars ?? 24_000);
  const maxTokens = Math.min(cfg.maxTokens, input.maxTokens ?? cfg.maxTokens);
  return {
    model: cfg.model,
    temperature: 0,
    max_tokens: maxTokens,
    messages: [
      { role: 'system', content: SYSTEM_PROMPT },
      {
        role: 'user',
        content: `Current goal: ${clip(input.goal, 600)}\nWhy compacted: ${input.reason}\nSummarize in at most ${maxTokens} tokens:\n\n${transcript}`,
      },
    ],
  };
}

function replyText(body: unknown): string | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const choices = (body as { choices?: unknown }).choices;
  if (!Array.isArray(choices) || choices.length === 0) return undefined;
  const msg = (choices[0] as { message?: { content?: unknown } } | undefined)?.message;
  const content = msg?.content;
  return typeof content === 'string' && content.trim().length > 0 ? content.trim() : undefined;
}

/** Create the endpoint summarizer. */
export function createOpenAISummarizer(cfg: OpenAISummarizerConfig): OpenAISummarizer {
  const stats: SummarizerStats = { calls: 0, succeeded: 0, fallbacks: 0 };
  const env = cfg.env ?? process.env;
  const url = `${cfg.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const log = cfg.logger?.child({ component: 'summarizer' });
  const fallback = (input: SummarizeInput, why: string): string => {
    stats.fallbacks++;
    stats.lastFallback = why;
    log?.warn({ url, model: cfg.model, why }, 'summarizer endpoint failed; used the extractive summary');
    return extractiveSummary({ ...input, maxTokens: input.maxTokens ?? DEFAULT_SUMMARY_TOKENS });
  };
  return {
    name: 'openai',
    stats,
    async summarize(input: SummarizeInput, signal?: AbortSignal): Promise<string> {
      stats.calls++;
      const ctl = new AbortController();
      const timer = setTimeout(() => ctl.abort(new Error(`timed out after ${cfg.timeoutMs} ms`)), cfg.timeoutMs);
      const onAbort = (): void => ctl.abort(signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        const key = cfg.apiKeyEnv ? env[cfg.apiKeyEnv] : undefined;
        if (key) headers['authorization'] = `Bearer ${key}`;
        const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(buildRequest(cfg, input)), signal: ctl.signal });
        if (!res.ok) {
          await res.body?.cancel();
          return fallback(input, `HTTP ${res.status}`);
        }
        let body: unknown;
        try {
          body = await res.json();
        } catch {
          return fallback(input, 'malformed reply: not JSON');
        }
        const text = replyText(body);
        if (text === undefined) return fallback(input, 'malformed reply: no choices[0].message.content');
        stats.succeeded++;
        return text;
      } catch (err) {
        // the caller gave the summary up (its plan was dropped, or contextd stops): no fallback, no warning
        if (signal?.aborted) throw signal.reason;
        const why = ctl.signal.aborted ? describeError(ctl.signal.reason ?? err) : describeError(err);
        return fallback(input, why);
      } finally {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      }
    },
  };
}

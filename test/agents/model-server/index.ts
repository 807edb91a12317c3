/**
 * A scripted model server for tests that drive real agent binaries offline.
 *
 * ```ts
 * const server = await startModelServer({ script: codingTask(), workspace: dir, lifetimeMs: 120_000 });
 * // Claude Code: ANTHROPIC_BASE_URL=server.url, any ANTHROPIC_API_KEY
 * // Codex: model_providers.scripted.base_url = `${server.url}/v1`, wire_api = "responses"
 * ...
 * server.requestsOf('main');          // every main-agent request body, in order
 * await server.waitFor((r) => r.kind === 'compaction');
 * await server.close();               // idempotent; also closes itself after lifetimeMs
 * ```
 *
 * Routes: `POST /v1/messages` (Anthropic Messages, streaming SSE or one JSON body),
 * `POST /v1/messages/count_tokens`, `POST …/responses` (OpenAI Responses, streaming SSE).
 * Anything else is answered 404 and recorded. Each request is classified as `main` (the agent's
 * own turn: gets the next scripted step), `compaction` (the agent asking for a summary of the
 * conversation: gets `script.summary`), `side` (titles, topic checks: gets `script.sideReply`),
 * `count_tokens`, `invalid` (400: an orphan tool result or an unanswered tool call, as the real
 * APIs reject them) or `unknown`. Reported `usage.input_tokens` is the o200k count of what the
 * request sent. Credentials in headers are never recorded. With `Script.recallOnce` the model
 * calls contextd's `contextd_recall` tool once, with a handle quoted in a summary it received.
 */
export { startModelServer, type ApiName, type ModelServer, type ModelServerOptions, type RecordedRequest, type RequestKind } from './server.js';
export { codingTask, codingWorkspaceFiles, QUOTED_HANDLE_RE, RECALL_CALL_RE, RECALL_TOOL, type CodingTaskOptions, type Cursor, type Script, type Step, type ToolAction, type Turn } from './script.js';
export { anthropicPairingError } from './anthropic.js';
export { responsesPairingError } from './openai.js';
export { textOf } from './conversation.js';

/**
 * Which conversation a request belongs to. Agents that say so: Claude Code sends an
 * `X-Claude-Code-Session-Id` header and the same id inside `metadata.user_id` (a JSON string
 * in 2.x, `user_…_session_<uuid>` before); Codex CLI sends a `session_id` header and uses the
 * id as `prompt_cache_key`. Otherwise the conversation is known by a fingerprint of its first
 * messages. One agent session can hold several conversations (side requests with their own
 * system prompt, sub-agents), so the key is always the session hint plus that fingerprint.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { isObject, str, type JsonObject } from './request.js';

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s !== undefined && SAFE_ID.test(s) ? s : undefined;
}

/** The session id in Anthropic `metadata.user_id`, either format. */
export function sessionFromUserId(userId: string): string | undefined {
  try {
    const v: unknown = JSON.parse(userId);
    if (isObject(v)) {
      const id = str(v['session_id']) ?? str(v['sessionId']);
      if (id && SAFE_ID.test(id)) return id;
    }
  } catch {
    // not JSON: the older `user_<hash>_account_<uuid>_session_<uuid>` form
  }
  const m = /_session_([A-Za-z0-9-]{8,64})$/.exec(userId);
  return m?.[1];
}

/** The agent's own session id for a request, when it names one. */
export function sessionHint(headers: IncomingHttpHeaders, body: JsonObject): string | undefined {
  const direct = header(headers, 'x-claude-code-session-id') ?? header(headers, 'session_id') ?? header(headers, 'session-id') ?? header(headers, 'conversation_id');
  if (direct) return direct;
  const meta = body['metadata'];
  const userId = isObject(meta) ? str(meta['user_id']) : undefined;
  const fromMeta = userId ? sessionFromUserId(userId) : undefined;
  if (fromMeta) return fromMeta;
  const cacheKey = str(body['prompt_cache_key']);
  return cacheKey && SAFE_ID.test(cacheKey) ? cacheKey : undefined;
}

/** 16 hex of a sha256. */
export function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/**
 * Small pure helpers shared by the transcript adapters: safe field access on untyped JSON,
 * timestamp parsing, text extraction from content parts, and tool-error heuristics.
 * Nothing here throws on odd input.
 */

/** A JSON object value (what `JSON.parse` gives for `{...}`). */
export type JsonObject = Record<string, unknown>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

export function obj(v: unknown): JsonObject | undefined {
  return isObject(v) ? v : undefined;
}

export function arr(v: unknown): readonly unknown[] | undefined {
  return Array.isArray(v) ? v : undefined;
}

const HAS_ZONE = /(?:[zZ]|[+-]\d{2}(?::?\d{2})?)$/;
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/;

/**
 * Parse a transcript timestamp to epoch ms. ISO strings without a zone (hermes writes naive
 * local times) are read as UTC; numbers are taken as epoch ms (or seconds when < 1e12).
 */
export function parseTimestamp(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) return v < 1e12 ? Math.round(v * 1000) : v;
  if (typeof v !== 'string' || v.length === 0) return undefined;
  let s = v.trim();
  if (ISO_DATE_TIME.test(s) && !HAS_ZONE.test(s)) s = `${s.replace(' ', 'T')}Z`;
  const ms = Date.parse(s);
  return Number.isFinite(ms) ? ms : undefined;
}

/** Text and image count of an OpenAI / Codex / Claude style content value (string or parts). */
export interface PartsText {
  text: string;
  imageCount: number;
}

const TEXT_PART_TYPES = new Set(['text', 'input_text', 'output_text', 'summary_text', 'reasoning_text']);
const IMAGE_PART_TYPES = new Set(['image', 'image_url', 'input_image', 'output_image']);

/**
 * Join the text parts of a content value with newlines and count image parts. Opaque parts
 * (base64 sources, data URLs, encrypted blobs) never reach the text.
 */
export function partsText(content: unknown): PartsText {
  if (typeof content === 'string') return { text: content, imageCount: 0 };
  const parts = arr(content);
  if (!parts) return { text: '', imageCount: 0 };
  const texts: string[] = [];
  let imageCount = 0;
  for (const p of parts) {
    if (typeof p === 'string') {
      texts.push(p);
      continue;
    }
    const part = obj(p);
    if (!part) continue;
    const type = str(part['type']);
    if (type !== undefined && IMAGE_PART_TYPES.has(type)) {
      imageCount++;
      continue;
    }
    const text = str(part['text']);
    if (text !== undefined && (type === undefined || TEXT_PART_TYPES.has(type))) {
      texts.push(text);
      continue;
    }
    // An unknown part type with a text field (e.g. MCP `{type:"resource", text}`) still counts as text.
    if (text !== undefined) texts.push(text);
  }
  return { text: texts.join('\n'), imageCount };
}

/** Stringify tool arguments: strings pass through, anything else becomes compact JSON. */
export function argsString(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined) return '';
  try {
    return JSON.stringify(v) ?? '';
  } catch {
    return '';
  }
}

/** Try to parse a string as a JSON value; undefined when it is not JSON. */
export function tryJson(s: string): unknown {
  const t = s.trimStart();
  if (t.length === 0 || (t[0] !== '{' && t[0] !== '[')) return undefined;
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Failure flags of a JSON tool result object: `"error"` with a non-empty value,
 * `"success": false`, or a non-zero numeric `exit_code` (top level or under `metadata`).
 */
export function jsonResultFailed(o: JsonObject): boolean {
  const err = o['error'];
  if (err !== undefined && err !== null && err !== false && err !== '') return true;
  if (o['success'] === false) return true;
  const exit = jsonExitCode(o);
  return exit !== undefined && exit !== 0;
}

/** The exit status a JSON tool result records (`exit_code`, or `metadata.exit_code`). */
export function jsonExitCode(o: JsonObject): number | undefined {
  return num(o['exit_code']) ?? num(obj(o['metadata'])?.['exit_code']);
}

/** Plain-text tool output that reports a failure (Codex sandbox refusals, tool-call errors). */
const TEXT_ERROR = /^(?:failed in sandbox|sandbox denied|error:|tool call error|execution error|exec error|aborted)/i;

export function textResultFailed(text: string): boolean {
  return TEXT_ERROR.test(text.trimStart()) || text.includes('failed in sandbox');
}

/** Stamp `sourceOffset` (the line's byte offset) on every message event that lacks it. */
export function withSourceOffset<E extends { type: string }>(events: E[], sourceOffset: number): E[] {
  for (let i = 0; i < events.length; i++) {
    const e = events[i] as unknown as { type: string; message?: { sourceOffset?: number } };
    if (e.type === 'message' && e.message !== undefined && e.message.sourceOffset === undefined) {
      events[i] = { ...e, message: { ...e.message, sourceOffset } } as unknown as E;
    }
  }
  return events;
}

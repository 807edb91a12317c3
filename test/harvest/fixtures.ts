/**
 * Test helpers: temp dirs, real SQLite stores, a builder for openai-chat (hermes-style)
 * transcripts and the equivalent Message[], and planted fake secrets from a seeded PRNG.
 */
import { seededRandom } from '../../src/util/random.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Message } from '../../src/model/messages.js';
import { openDb, type Db } from '../../src/store/db.js';
import { TemplateStore } from '../../src/store/templates.js';


const dirs: string[] = [];
const dbs: Db[] = [];

export function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'contextd-'));
  dirs.push(d);
  return d;
}

export function tempStore(dir: string = tempDir()): { dir: string; dbPath: string; db: Db; store: TemplateStore } {
  const dbPath = join(dir, 'state', 'contextd.db');
  const db = openDb(dbPath);
  dbs.push(db);
  return { dir, dbPath, db, store: new TemplateStore(db) };
}

export function trackDb(db: Db): Db {
  dbs.push(db);
  return db;
}

export function cleanup(): void {
  for (const db of dbs.splice(0)) if (db.open) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** Deterministic fake secrets per seed. */
export const prng = seededRandom;

export function randomChars(rand: () => number, n: number, alphabet: string): string {
  let s = '';
  for (let i = 0; i < n; i++) s += alphabet[Math.floor(rand() * alphabet.length)] ?? 'x';
  return s;
}

const UPPER_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const B64 = `${ALNUM}+/`;
const B64URL = `${ALNUM}-_`;

/** Fake credentials of every kind the redactor must catch, and the part that must never leak. */
export interface PlantedSecret {
  readonly kind: string;
  /** The text planted in a transcript. */
  readonly text: string;
  /** Substrings that must not appear anywhere after harvest (the random parts). */
  readonly mustNotLeak: readonly string[];
}

export function plantedSecrets(seed: number): PlantedSecret[] {
  const r = prng(seed);
  const aws = `AKIA${randomChars(r, 16, UPPER_DIGITS)}`;
  const awsSecret = randomChars(r, 40, B64);
  const ghp = randomChars(r, 36, ALNUM);
  const pat = `${randomChars(r, 22, ALNUM)}_${randomChars(r, 59, ALNUM)}`;
  const openai = randomChars(r, 48, ALNUM);
  const anthropic = `${randomChars(r, 86, B64URL)}AA`;
  const slack = `${randomChars(r, 12, '0123456789')}-${randomChars(r, 13, '0123456789')}-${randomChars(r, 24, ALNUM)}`;
  const keyLines = Array.from({ length: 6 }, () => randomChars(r, 64, B64));
  const pass = randomChars(r, 18, ALNUM);
  const jwtPayload = Buffer.from(JSON.stringify({ sub: randomChars(r, 12, ALNUM), name: 'Test User', iat: 1516239022 })).toString('base64url');
  const jwtSig = randomChars(r, 43, B64URL);
  const mailUser = `${randomChars(r, 8, 'abcdefghijklmnopqrstuvwxyz')}.${randomChars(r, 6, 'abcdefghijklmnopqrstuvwxyz')}`;
  return [
    { kind: 'aws-access-key', text: aws, mustNotLeak: [aws] },
    { kind: 'aws-secret-key', text: `aws_secret_access_key = ${awsSecret}`, mustNotLeak: [awsSecret] },
    { kind: 'github-token', text: `ghp_${ghp}`, mustNotLeak: [ghp] },
    { kind: 'github-pat', text: `github_pat_${pat}`, mustNotLeak: [pat] },
    { kind: 'openai-key', text: `sk-proj-${openai}`, mustNotLeak: [openai] },
    { kind: 'anthropic-key', text: `sk-ant-api03-${anthropic}`, mustNotLeak: [anthropic] },
    { kind: 'slack-token', text: `xoxb-${slack}`, mustNotLeak: [slack] },
    {
      kind: 'private-key',
      text: `-----BEGIN RSA PRIVATE KEY-----\n${keyLines.join('\n')}\n-----END RSA PRIVATE KEY-----`,
      mustNotLeak: keyLines,
    },
    { kind: 'url-password', text: `postgres://admin:${pass}@db.internal.example:5432/app`, mustNotLeak: [pass] },
    { kind: 'jwt', text: `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.${jwtPayload}.${jwtSig}`, mustNotLeak: [jwtPayload, jwtSig] },
    { kind: 'email', text: `${mailUser}@example-corp.com`, mustNotLeak: [`${mailUser}@example-corp.com`, mailUser] },
  ];
}

interface ChatLine {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  finish_reason?: string;
  timestamp?: string;
}

/** Builds one session both as openai-chat JSONL lines and as normalized Message[]. */
export class SessionBuilder {
  readonly lines: ChatLine[] = [];
  readonly messages: Message[] = [];
  private n = 0;
  private t: number;

  constructor(startMs = Date.parse('2026-11-20T10:00:00Z')) {
    this.t = startMs;
  }

  private stamp(): { ms: number; iso: string } {
    this.t += 1000;
    return { ms: this.t, iso: new Date(this.t).toISOString() };
  }

  system(text: string): this {
    const { ms, iso } = this.stamp();
    this.lines.push({ role: 'system', content: text, timestamp: iso });
    this.messages.push({ id: `m${this.n++}`, role: 'system', text, timestamp: ms });
    return this;
  }

  user(text: string): this {
    const { ms, iso } = this.stamp();
    this.lines.push({ role: 'user', content: text, timestamp: iso });
    this.messages.push({ id: `m${this.n++}`, role: 'user', text, timestamp: ms });
    return this;
  }

  assistant(text: string): this {
    const { ms, iso } = this.stamp();
    this.lines.push({ role: 'assistant', content: text, finish_reason: 'stop', timestamp: iso });
    this.messages.push({ id: `m${this.n++}`, role: 'assistant', text, timestamp: ms });
    return this;
  }

  /** A tool call and its result; `error` makes the result a failure (exit_code 1). */
  call(name: string, args: Record<string, unknown>, output: string, opts: { error?: boolean; rejected?: boolean } = {}): this {
    const id = `call_${this.n}`;
    const argText = JSON.stringify(args);
    const a = this.stamp();
    this.lines.push({ role: 'assistant', content: '', tool_calls: [{ id, type: 'function', function: { name, arguments: argText } }], timestamp: a.iso });
    this.messages.push({ id: `m${this.n++}`, role: 'assistant', text: '', toolCalls: [{ id, name, arguments: argText }], timestamp: a.ms });
    const b = this.stamp();
    const content = opts.rejected ? "The user doesn't want to proceed with this tool use." : JSON.stringify({ output, exit_code: opts.error ? 1 : 0 });
    this.lines.push({ role: 'tool', content, tool_call_id: id, timestamp: b.iso });
    this.messages.push({
      id: `m${this.n++}`,
      role: 'tool',
      text: content,
      toolCallId: id,
      toolName: name,
      ...(opts.error ? { isError: true } : {}),
      timestamp: b.ms,
    });
    return this;
  }

  jsonl(): string {
    return `${this.lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
  }

  writeTo(path: string): string {
    writeFileSync(path, this.jsonl());
    return path;
  }
}

/** A typical coding session: failing test, fix, passing test (a confirmed recovery). */
export function codingSession(opts: { task?: string; file?: string; start?: number; system?: string } = {}): SessionBuilder {
  const file = opts.file ?? 'src/parser.ts';
  return new SessionBuilder(opts.start)
    .system(opts.system ?? '# Project rules\nUse TypeScript strict mode.')
    .user(opts.task ?? 'fix the failing parser test in src/parser.ts. Never use any. Always run npm test after edits.')
    .call('read_file', { path: file }, 'export function parse(s: string) { return s.split(","); }')
    .call('terminal', { command: 'npm test' }, 'FAIL test/parser.test.ts\nError: expected 3 items but received 2 in parse()', { error: true })
    .call('patch', { path: file, old_string: 'split(",")', new_string: 'split(/,\\s*/)' }, 'patched')
    .call('terminal', { command: 'npm test' }, 'PASS test/parser.test.ts\n12 tests passed')
    .assistant('Fixed the parser split and the tests pass.');
}

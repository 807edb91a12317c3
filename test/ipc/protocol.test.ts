import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Dispatcher, type DispatchConnection } from '../../src/ipc/dispatch.js';
import {
  ClientMessageSchema,
  JsonRpcErrorResponseSchema,
  JsonRpcNotificationSchema,
  JsonRpcRequestSchema,
  JsonRpcSuccessSchema,
  METHODS,
  NOTIFICATIONS,
  PARAMS_SCHEMAS,
  PROTOCOL_VERSION,
  ServerMessageSchema,
  isMethodName,
} from '../../src/ipc/protocol.js';
import { NOTIFICATION_SCHEMAS, RESULT_SCHEMAS } from '../../src/ipc/results.js';
import { silentLogger } from '../../src/util/logger.js';
import { stubHandlers } from './stubs.js';

const fixture = (name: string): string[] =>
  fs.readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8').split('\n').filter((l) => l !== '');

const golden = fixture('golden-wire.jsonl');

function dispatcher(): Dispatcher {
  return new Dispatcher({
    handlers: stubHandlers().handlers,
    serverInfo: { name: 'contextd', version: '0.1.0' },
    requireInitialize: false,
    maxLineBytes: 1024,
    handlerTimeoutMs: 0,
    logger: silentLogger(),
  });
}

function frame(text: string): { bytes: Buffer; offset: number; length: number; oversized: boolean } {
  const bytes = Buffer.from(text);
  return { bytes, offset: 0, length: bytes.length, oversized: false };
}

describe('protocol constants', () => {
  it('names every method of design §6 and both notifications', () => {
    expect(PROTOCOL_VERSION).toBe(1);
    expect(Object.values(METHODS).sort()).toEqual(
      ['archive.search', 'compaction.ack', 'daemon.status', 'initialize', 'section.recall', 'session.compact', 'session.end', 'session.headroom', 'session.sections', 'session.subscribe', 'session.sync', 'warm.bootstrap'].sort(),
    );
    expect(Object.values(NOTIFICATIONS).sort()).toEqual(['compaction.proposed', 'session.headroom']);
    for (const m of Object.values(METHODS)) expect(isMethodName(m)).toBe(true);
    expect(isMethodName('toString')).toBe(false);
  });
});

describe('golden wire messages', () => {
  it('round-trip byte for byte through the envelope schemas', () => {
    const methodById = new Map<unknown, string>();
    const seenMethods = new Set<string>();
    const seenNotes = new Set<string>();
    const seenResults = new Set<string>();
    for (const line of golden) {
      const raw = JSON.parse(line) as Record<string, unknown>;
      if ('method' in raw && 'id' in raw) {
        const env = JsonRpcRequestSchema.parse(raw);
        expect(JSON.stringify(env)).toBe(line);
        expect(ClientMessageSchema.safeParse(raw).success).toBe(true);
        expect(ServerMessageSchema.safeParse(raw).success).toBe(false);
        expect(isMethodName(env.method)).toBe(true);
        const params = PARAMS_SCHEMAS[env.method as keyof typeof PARAMS_SCHEMAS].parse(env.params);
        const expected = env.method === 'warm.bootstrap' ? { budgetTokens: 2000, ...env.params } : env.params;
        expect(params).toEqual(expected);
        // Parsing is a fixed point: the output parses to itself.
        expect(PARAMS_SCHEMAS[env.method as keyof typeof PARAMS_SCHEMAS].parse(params)).toEqual(params);
        methodById.set(env.id, env.method);
        seenMethods.add(env.method);
      } else if ('method' in raw) {
        const env = JsonRpcNotificationSchema.parse(raw);
        expect(JSON.stringify(env)).toBe(line);
        expect(ServerMessageSchema.safeParse(raw).success).toBe(true);
        const schema = NOTIFICATION_SCHEMAS[env.method as keyof typeof NOTIFICATION_SCHEMAS];
        expect(schema, env.method).toBeDefined();
        expect(schema.parse(env.params)).toEqual(env.params); // loose: extra fields survive
        seenNotes.add(env.method);
      } else if ('result' in raw) {
        const env = JsonRpcSuccessSchema.parse(raw);
        expect(JSON.stringify(env)).toBe(line);
        expect(ClientMessageSchema.safeParse(raw).success).toBe(false);
        const method = methodById.get(env.id) as keyof typeof RESULT_SCHEMAS;
        expect(method, `response ${String(env.id)} follows its request`).toBeDefined();
        expect(RESULT_SCHEMAS[method].parse(env.result)).toEqual(env.result);
        seenResults.add(method);
      } else {
        const env = JsonRpcErrorResponseSchema.parse(raw);
        expect(JSON.stringify(env)).toBe(line);
        expect(ServerMessageSchema.safeParse(raw).success).toBe(true);
      }
    }
    expect([...seenMethods].sort()).toEqual(Object.values(METHODS).sort());
    expect([...seenNotes].sort()).toEqual(Object.values(NOTIFICATIONS).sort());
    // Every method but the expired ack has a success example.
    expect(seenResults.size).toBe(Object.values(METHODS).length);
  });

  it('are reproduced exactly by the dispatcher for the error examples', async () => {
    const d = dispatcher();
    const conn: DispatchConnection = { id: 'c1', initialized: false };
    const unknown = await d.handleLine(frame(golden.find((l) => l.includes('"zzz"') && l.includes('"method"')) as string), conn);
    expect(JSON.stringify(unknown)).toBe(golden.find((l) => l.includes('-32001')));
    const parse = await d.handleLine(frame('hello'), conn);
    expect(JSON.stringify(parse)).toBe(golden.at(-1));
  });

  it('reject each invalid message with the documented code and a message naming the problem', async () => {
    const d = dispatcher();
    const cases = fixture('golden-invalid.jsonl').map((l) => JSON.parse(l) as { line: string; code: number; mentions: string });
    expect(cases.length).toBeGreaterThan(10);
    for (const c of cases) {
      const reply = await d.handleLine(frame(c.line), { id: 'c1', initialized: false });
      expect(reply, c.line).toBeDefined();
      const err = JsonRpcErrorResponseSchema.parse(reply).error;
      expect(err.code, c.line).toBe(c.code);
      expect(err.message, c.line).toContain(c.mentions);
    }
  });

  it('rejects envelope typos that a loose schema would let through', () => {
    expect(JsonRpcRequestSchema.safeParse({ jsonrpc: '2.0', id: 1, method: 'x', param: {} }).success).toBe(false);
    expect(JsonRpcRequestSchema.safeParse({ jsonrpc: '2.0', id: 1.5, method: 'x' }).success).toBe(false);
    expect(JsonRpcSuccessSchema.safeParse({ jsonrpc: '2.0', id: 1 }).success).toBe(false);
    expect(JsonRpcErrorResponseSchema.safeParse({ jsonrpc: '2.0', id: 1, error: { code: 1, message: 'x', stack: 'at …' } }).success).toBe(false);
    // initialize.capabilities is deliberately loose: unknown capabilities are ignored.
    expect(PARAMS_SCHEMAS.initialize.safeParse({ client: { name: 'a', version: '1' }, capabilities: { future: true } }).success).toBe(true);
  });

  it('answers an oversized line with -32004 and id null', async () => {
    const reply = await dispatcher().handleLine({ bytes: Buffer.alloc(0), offset: 0, length: 5000, oversized: true }, { id: 'c1', initialized: false });
    expect(reply).toMatchObject({ id: null, error: { code: -32004 } });
  });
});

import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defineHandler } from '../../src/ipc/handlers.js';
import { SessionParamsSchema } from '../../src/ipc/protocol.js';
import { RpcServer } from '../../src/ipc/server.js';
import { ContextdError, ErrorCode } from '../../src/util/errors.js';
import { Resources, waitEvent, type RawPeer } from './helpers.js';
import { SESSION, stubHandlers } from './stubs.js';

const res = new Resources();
afterEach(() => res.closeAll());

async function serve(extra: Partial<ConstructorParameters<typeof RpcServer>[0]> = {}): Promise<{ server: RpcServer; socketPath: string }> {
  const socketPath = path.join(res.tmpDir(), 'c.sock');
  const server = res.server({ socketPath, handlers: stubHandlers().handlers, ...extra });
  await server.listen();
  return { server, socketPath };
}

function errorOf(reply: Record<string, unknown>): { code: number; message: string; data?: unknown } {
  expect(reply['jsonrpc']).toBe('2.0');
  expect(reply).toHaveProperty('error');
  return reply['error'] as { code: number; message: string };
}

async function works(peer: RawPeer, id = 99): Promise<void> {
  const ok = await peer.request(id, 'session.headroom', { sessionId: SESSION });
  expect(ok['id']).toBe(id);
  expect(ok['result']).toMatchObject({ total: 128_000 });
}

describe('RpcServer framing and errors', () => {
  it('answers junk with -32700 (id null) and keeps the connection usable', async () => {
    const { socketPath } = await serve();
    const peer = await res.raw(socketPath);
    peer.write('this is not json\n');
    const reply = await peer.next();
    expect(reply['id']).toBeNull();
    expect(errorOf(reply).code).toBe(-32700);
    expect(errorOf(reply).message).toMatch(/one JSON object per line/);
    await works(peer);
  });

  it('answers invalid UTF-8 with -32700', async () => {
    const { socketPath } = await serve();
    const peer = await res.raw(socketPath);
    peer.write(Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}\n')]));
    expect(errorOf(await peer.next()).code).toBe(-32700);
    await works(peer);
  });

  it('rejects a line over maxLineBytes with -32004 and serves the next request', async () => {
    const { socketPath } = await serve({ maxLineBytes: 1024 });
    const peer = await res.raw(socketPath);
    const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'session.headroom', params: { sessionId: 'x'.repeat(5000) } });
    // Send it in pieces so the framer has to discard across chunks.
    peer.write(big.slice(0, 700));
    peer.write(big.slice(700, 3000));
    peer.write(big.slice(3000) + '\n');
    const reply = await peer.next();
    expect(reply['id']).toBeNull();
    const e = errorOf(reply);
    expect(e.code).toBe(-32004);
    expect(e.message).toContain('1024');
    await works(peer, 2);
  });

  it('rejects batches, non-objects and bad envelopes with -32600', async () => {
    const { socketPath } = await serve();
    const peer = await res.raw(socketPath);
    peer.send([{ jsonrpc: '2.0', id: 1, method: 'daemon.status' }]);
    const batch = errorOf(await peer.next());
    expect(batch.code).toBe(-32600);
    expect(batch.message).toMatch(/batch/);
    peer.send(42);
    expect(errorOf(await peer.next()).code).toBe(-32600);
    // Misspelled envelope key: strict, and the id is echoed back.
    peer.send({ jsonrpc: '2.0', id: 7, method: 'daemon.status', parms: {} });
    const typo = await peer.next();
    expect(typo['id']).toBe(7);
    expect(errorOf(typo).code).toBe(-32600);
    expect(errorOf(typo).message).toContain('parms');
    peer.send({ jsonrpc: '1.0', id: 8, method: 'daemon.status' });
    const ver = await peer.next();
    expect(ver['id']).toBe(8);
    expect(errorOf(ver).code).toBe(-32600);
    await works(peer);
  });

  it('answers an unknown method with -32601 listing the methods', async () => {
    const { socketPath } = await serve();
    const peer = await res.raw(socketPath);
    const reply = await peer.request('a', 'session.frobnicate', {});
    expect(reply['id']).toBe('a');
    const e = errorOf(reply);
    expect(e.code).toBe(-32601);
    expect(e.message).toContain('session.frobnicate');
    expect(e.message).toContain('session.compact');
  });

  it('names the offending field in -32602', async () => {
    const { socketPath } = await serve();
    const peer = await res.raw(socketPath);
    const missing = errorOf(await peer.request(1, 'session.headroom', {}));
    expect(missing.code).toBe(-32602);
    expect(missing.message).toMatch(/sessionId/);
    const typo = errorOf(await peer.request(2, 'session.compact', { sessionId: SESSION, dryrun: true }));
    expect(typo.code).toBe(-32602);
    expect(typo.message).toContain('dryrun');
    const outcome = errorOf(await peer.request(3, 'session.end', { sessionId: SESSION, outcome: 'meh' }));
    expect(outcome.message).toMatch(/outcome/);
    const positional = errorOf(await peer.request(4, 'session.headroom', [SESSION]));
    expect(positional.code).toBe(-32602);
    const both = errorOf(await peer.request(5, 'session.subscribe', { sessionId: SESSION, transcriptPath: '/tmp/t.jsonl' }));
    expect(both.message).toMatch(/either sessionId or transcriptPath/);
    const relative = errorOf(await peer.request(6, 'session.subscribe', { transcriptPath: 'rel/t.jsonl' }));
    expect(relative.message).toMatch(/transcriptPath: must be an absolute path/);
  });

  it('maps contextd errors to their codes with an actionable message', async () => {
    const { socketPath } = await serve();
    const peer = await res.raw(socketPath);
    const e = errorOf(await peer.request(1, 'session.headroom', { sessionId: 'abc' }));
    expect(e.code).toBe(-32001);
    expect(e.message).toBe('unknown session "abc": subscribe to a session listed by daemon.status');
    const ack = errorOf(await peer.request(2, 'compaction.ack', { planId: 'nope', applied: true }));
    expect(ack.code).toBe(-32002);
    const rec = errorOf(await peer.request(3, 'section.recall', { sessionId: SESSION, handle: 'h-zz' }));
    expect(rec.code).toBe(-32003);
  });

  it('turns handler crashes into -32603 without leaking the message or stack', async () => {
    const handlers = {
      ...stubHandlers().handlers,
      boom: () => {
        throw new Error('secret /home/me/.ssh/id_rsa detail');
      },
      full: defineHandler(SessionParamsSchema, async () => {
        await Promise.resolve();
        throw new ContextdError(ErrorCode.STORE_FULL, 'the state database is full: free disk space under ~/.local/state/contextd', { path: '/x', nested: { a: 1 } });
      }),
    };
    const { socketPath } = await serve({ handlers });
    const peer = await res.raw(socketPath);
    const boom = await peer.request(1, 'boom', {});
    const e = errorOf(boom);
    expect(e.code).toBe(-32603);
    expect(JSON.stringify(boom)).not.toContain('secret');
    expect(JSON.stringify(boom)).not.toContain('at ');
    expect(e.message).toContain('ref c');
    const full = errorOf(await peer.request(2, 'full', { sessionId: 's' }));
    expect(full.code).toBe(-32006);
    expect(full.message).toMatch(/free disk space/);
    expect(full.data).toEqual({ path: '/x' });
    await works(peer, 3);
  });

  it('sends no response to client notifications, even failing ones', async () => {
    const seen: unknown[] = [];
    const handlers = { ...stubHandlers().handlers, 'client.log': (p: unknown) => void seen.push(p) };
    const { socketPath } = await serve({ handlers });
    const peer = await res.raw(socketPath);
    peer.send({ jsonrpc: '2.0', method: 'client.log', params: { n: 1 } });
    peer.send({ jsonrpc: '2.0', method: 'no.such.method' });
    peer.send({ jsonrpc: '2.0', method: 'session.headroom', params: {} });
    peer.write('\n   \n');
    await works(peer, 5);
    expect(peer.buffered).toBe(0);
    expect(seen).toEqual([{ n: 1 }]);
  });

  it('writes responses in request order even when handlers finish out of order', async () => {
    const releases: Array<() => void> = [];
    const handlers = {
      slow: () => new Promise<string>((resolve) => releases.push(() => resolve('slow'))),
      fast: () => 'fast',
    };
    const { socketPath } = await serve({ handlers });
    const peer = await res.raw(socketPath);
    peer.send({ jsonrpc: '2.0', id: 1, method: 'slow' });
    peer.send({ jsonrpc: '2.0', id: 2, method: 'fast' });
    peer.send({ jsonrpc: '2.0', id: 3, method: 'fast' });
    // The slow one is still pending, so nothing may be written yet: release it once it started.
    const deadline = Date.now() + 5000;
    while (releases.length === 0 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    expect(peer.buffered).toBe(0);
    releases[0]?.();
    const ids = [(await peer.next())['id'], (await peer.next())['id'], (await peer.next())['id']];
    expect(ids).toEqual([1, 2, 3]);
  });

  it('survives a half-sent line followed by a disconnect and keeps serving others', async () => {
    const { server, socketPath } = await serve();
    const other = await res.raw(socketPath);
    const rude = await res.raw(socketPath);
    const gone = waitEvent(server, 'disconnect');
    rude.write('{"jsonrpc":"2.0","id":1,"method":"daemon.st');
    rude.destroy();
    await gone;
    await works(other);
    const again = await res.raw(socketPath);
    await works(again, 7);
  });

  it('requires initialize first only when asked to (-32005)', async () => {
    const { socketPath } = await serve({ requireInitialize: true });
    const peer = await res.raw(socketPath);
    const e = errorOf(await peer.request(1, 'daemon.status', {}));
    expect(e.code).toBe(-32005);
    expect(e.message).toMatch(/initialize/);
    const init = await peer.request(2, 'initialize', { client: { name: 't', version: '1' } });
    expect(init['result']).toMatchObject({ server: { name: 'contextd' }, protocolVersion: 1 });
    await works(peer, 3);
  });

  it('treats omitted params as {}', async () => {
    const { socketPath } = await serve();
    const peer = await res.raw(socketPath);
    const status = await peer.request(1, 'daemon.status');
    expect(status['result']).toMatchObject({ server: { version: '0.0.0-test' } });
    const missing = errorOf(await peer.request(2, 'session.headroom'));
    expect(missing.message).toMatch(/sessionId/);
  });

  it('answers a peer that half-closes after sending, including a last line without newline', async () => {
    const handlers = {
      ...stubHandlers().handlers,
      later: () => new Promise<string>((resolve) => setImmediate(() => resolve('later'))),
    };
    const { socketPath } = await serve({ handlers });
    const peer = await res.raw(socketPath);
    peer.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'later' }) + '\n');
    peer.write(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'session.headroom', params: { sessionId: SESSION } }));
    peer.end();
    expect(await peer.next()).toMatchObject({ id: 1, result: 'later' });
    expect(await peer.next()).toMatchObject({ id: 2, result: { total: 128_000 } });
    await expect(peer.next(2000)).rejects.toThrow(/closed/);
  });

  it('answers -32006 for a stuck handler so later responses are not held back', async () => {
    const handlers = { ...stubHandlers().handlers, stuck: () => new Promise(() => undefined) };
    const { socketPath } = await serve({ handlers, handlerTimeoutMs: 50 });
    const peer = await res.raw(socketPath);
    peer.send({ jsonrpc: '2.0', id: 1, method: 'stuck' });
    peer.send({ jsonrpc: '2.0', id: 2, method: 'daemon.status' });
    const first = await peer.next();
    expect(first['id']).toBe(1);
    expect(errorOf(first).code).toBe(-32006);
    expect(errorOf(first).message).toMatch(/stuck did not finish within 50 ms/);
    expect(await peer.next()).toMatchObject({ id: 2, result: { server: { version: '0.0.0-test' } } });
  });
});

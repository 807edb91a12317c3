/**
 * Bounds on what agents' connections may hold: time to send a request, silence inside its body,
 * connections at once and body bytes at once. Raw sockets play the slow or greedy agent.
 */
import { describe, expect, it } from 'vitest';
import { connect, type Socket } from 'node:net';
import { resolveProxyOptions } from '../../src/proxy/index.js';
import { anthropicStream } from './upstream.js';
import { proxyRig, readChunks, type ProxyHarness } from './helpers.js';

const rig = proxyRig();

interface Raw {
  readonly socket: Socket;
  /** Everything the proxy sent so far. */
  received(): string;
  /** Resolves with ms since connect when the proxy closed the connection. */
  readonly closed: Promise<number>;
}

function raw(p: ProxyHarness): Promise<Raw> {
  const port = Number(new URL(p.url).port);
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const t0 = Date.now();
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.on('error', () => undefined);
    const closed = new Promise<number>((r) => socket.once('close', () => r(Date.now() - t0)));
    socket.once('connect', () => resolve({ socket, received: () => text, closed }));
    socket.once('error', reject);
  });
}

const head = (length: number): string => `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Resolves `true` if `p` settles within `ms`, else `false`. */
const within = (p: Promise<unknown>, ms: number): Promise<boolean> => Promise.race([p.then(() => true), sleep(ms).then(() => false)]);
const chatBody = JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello there' }] });

describe('proxy connection limits', () => {
  it('answers a body that stalls 408 and closes its connection after bodyIdleTimeoutMs', async () => {
    const p = await rig.start({ bodyIdleTimeoutMs: 300 });
    const c = await raw(p);
    c.socket.write(head(1000) + '{"a');
    expect(await within(c.closed, 3_000)).toBe(true);
    expect(await c.closed).toBeGreaterThanOrEqual(250);
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(c.received()).toMatch(/invalid_request_error/);
    expect(rig.upstream.requests).toHaveLength(0);
    // the proxy still serves the next request
    const ok = await fetch(`${p.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chatBody });
    expect(ok.status).toBe(200);
  });

  it('cuts a request still arriving after requestTimeoutMs, however steadily it dribbles', async () => {
    const p = await rig.start({ requestTimeoutMs: 600, bodyIdleTimeoutMs: 10_000 });
    const c = await raw(p);
    c.socket.write(head(10_000));
    const drip = setInterval(() => c.socket.writable && c.socket.write('a'), 50);
    try {
      expect(await within(c.closed, 5_000)).toBe(true);
    } finally {
      clearInterval(drip);
    }
    // a connection that never finishes its headers is cut too
    const silent = await raw(p);
    silent.socket.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n');
    expect(await within(silent.closed, 5_000)).toBe(true);
    expect(rig.upstream.requests).toHaveLength(0);
  });

  it('does not cut a streamed response that lasts longer than requestTimeoutMs', async () => {
    const p = await rig.start({ requestTimeoutMs: 300 });
    const chunks = anthropicStream('slow words');
    rig.upstream.behave = () => ({ kind: 'sse', chunks, gate: () => sleep(200) });
    const res = await fetch(`${p.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'claude-test', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] }) });
    const started = Date.now();
    expect(await readChunks(res)).toBe(chunks.join(''));
    expect(Date.now() - started).toBeGreaterThan(600); // well past requestTimeoutMs
  });

  it('closes connections past maxConnections at once and serves again when one ends', async () => {
    const p = await rig.start({ maxConnections: 3 });
    const held = await Promise.all([raw(p), raw(p), raw(p)]);
    await sleep(50);
    const extra = await raw(p);
    expect(await within(extra.closed, 2_000)).toBe(true);
    expect(extra.received()).toBe('');
    for (const c of held) expect(c.socket.destroyed).toBe(false);
    held[0]?.socket.destroy();
    await held[0]?.closed;
    await sleep(50);
    const next = await raw(p);
    next.socket.write(head(Buffer.byteLength(chatBody)) + chatBody);
    await within(new Promise<void>((r) => next.socket.on('data', () => r())), 2_000);
    expect(next.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(p.logs()).toMatch(/too many connections/);
    for (const c of [...held, next]) c.socket.destroy();
  });

  it('refuses a body with 503 while other connections hold maxBufferedBytes, and takes it once they are gone', async () => {
    const p = await rig.start({ maxBodyBytes: 4096, maxBufferedBytes: 8050, bodyIdleTimeoutMs: 10_000 });
    // two stalled bodies hold 8000 bytes: the next 75-byte body would pass 8050
    const greedy = await Promise.all([raw(p), raw(p)]);
    for (const g of greedy) g.socket.write(head(4096) + 'x'.repeat(4000));
    await sleep(100);
    const res = await fetch(`${p.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chatBody });
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ error: { type: 'server_error' } });
    for (const g of greedy) g.socket.destroy();
    await Promise.all(greedy.map((g) => g.closed));
    await sleep(50);
    const ok = await fetch(`${p.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chatBody });
    expect(ok.status).toBe(200);
    expect(rig.upstream.requests).toHaveLength(1);
  });

  it('validates the limits with the rest of the proxy options', () => {
    const loop = { idleTimeoutMs: 1, budgetTokens: undefined, reserveRatio: 0.15, hysteresis: 0.1 };
    const o = resolveProxyOptions({ listen: '0' }, loop);
    expect(o).toMatchObject({ requestTimeoutMs: 300_000, bodyIdleTimeoutMs: 30_000, maxConnections: 128, maxBufferedBytes: 8 * 32 * 1024 * 1024 });
    expect(() => resolveProxyOptions({ listen: '0', maxBodyBytes: 4096, maxBufferedBytes: 2048 }, loop)).toThrow(/proxy\.maxBufferedBytes/);
  });
});

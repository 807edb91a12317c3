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

/** A raw HTTP/1.1 response: status, lower-cased headers, body (as far as content-length says). */
function parseResponse(text: string): { status: number; headers: Record<string, string>; body: string } {
  const end = text.indexOf('\r\n\r\n');
  expect(end, `a whole response head in ${JSON.stringify(text.slice(0, 80))}`).toBeGreaterThan(0);
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
  const body = Buffer.from(text.slice(end + 4), 'latin1').subarray(0, Number(headers['content-length'])).toString('utf8');
  return { status: Number(statusLine.split(' ')[1]), headers, body };
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
    const stalled = parseResponse(c.received());
    expect(stalled.status).toBe(408);
    expect(stalled.headers['connection']).toBe('close');
    expect(JSON.parse(stalled.body)).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringMatching(/proxy\.bodyIdleTimeoutMs/) } });
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
    // answered 408 in the provider's shape (OpenAI, from the path), not Node's bare 408
    const cut = parseResponse(c.received());
    expect(cut.status).toBe(408);
    expect(cut.headers['connection']).toBe('close');
    expect(JSON.parse(cut.body)).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringMatching(/proxy\.requestTimeoutMs/) } });
    // a connection that never finishes its headers is cut too, answered 408 with a JSON body
    // both providers' clients read (its path was never known)
    const silent = await raw(p);
    silent.socket.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n');
    expect(await within(silent.closed, 5_000)).toBe(true);
    const unheaded = parseResponse(silent.received());
    expect(unheaded.status).toBe(408);
    expect(JSON.parse(unheaded.body)).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', code: 'invalid_request_error', message: expect.any(String) } });
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

  it('answers connections past maxConnections 503 with Retry-After and a JSON error, and serves again when one ends', async () => {
    const p = await rig.start({ maxConnections: 3 });
    const held = await Promise.all([raw(p), raw(p), raw(p)]);
    await sleep(50);
    // an agent's request over the limit: a 503 its SDK retries, not a reset
    const secret = 'sk-ant-test-SECRET-0123456789';
    const refused = await fetch(`${p.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': secret, authorization: `Bearer ${secret}` }, body: chatBody, signal: AbortSignal.timeout(10_000) });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('2');
    expect(refused.headers.get('content-type')).toBe('application/json');
    const err: unknown = JSON.parse(await refused.text());
    // read by Anthropic's SDK (type, error.type, error.message) and OpenAI's (error.message, error.code)
    expect(err).toMatchObject({ type: 'error', error: { type: 'overloaded_error', code: 'server_error', message: expect.stringMatching(/proxy\.maxConnections/) } });
    // a connection that sent nothing yet is answered and closed too
    const extra = await raw(p);
    expect(await within(extra.closed, 3_000)).toBe(true);
    expect(parseResponse(extra.received()).status).toBe(503);
    for (const c of held) expect(c.socket.destroyed).toBe(false);
    expect(rig.upstream.requests).toHaveLength(0);
    held[0]?.socket.destroy();
    await held[0]?.closed;
    await sleep(50);
    const next = await raw(p);
    next.socket.write(head(Buffer.byteLength(chatBody)) + chatBody);
    await within(new Promise<void>((r) => next.socket.on('data', () => r())), 2_000);
    expect(next.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(p.logs()).toMatch(/too many connections/);
    expect(p.logs()).not.toContain(secret);
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
    expect(res.headers.get('retry-after')).toBe('2');
    expect(await res.json()).toMatchObject({ error: { type: 'server_error' } });
    for (const g of greedy) g.socket.destroy();
    await Promise.all(greedy.map((g) => g.closed));
    await sleep(50);
    const ok = await fetch(`${p.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chatBody });
    expect(ok.status).toBe(200);
    expect(rig.upstream.requests).toHaveLength(1);
  });

  it('answers a body over maxBodyBytes 413 that the agent can read, however much it goes on sending', async () => {
    const p = await rig.start({ maxBodyBytes: 4096 });
    for (const declared of [true, false]) {
      // an agent that sends its whole body before it reads the answer (as many HTTP clients do)
      const c = await raw(p);
      c.socket.pause();
      const total = 32 * 1024 * 1024;
      const chunk = Buffer.alloc(1024 * 1024, 'x');
      const framing = declared ? `Content-Length: ${total}\r\n` : 'Transfer-Encoding: chunked\r\n';
      c.socket.write(`POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${framing}\r\n`);
      const sent = await new Promise<boolean>((resolve) => {
        c.socket.once('close', () => resolve(false));
        let i = 0;
        const next = (): void => {
          if (i++ === total / chunk.length) return void c.socket.write(declared ? '' : '0\r\n\r\n', () => resolve(true));
          c.socket.write(declared ? chunk : Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]), (e) => (e ? resolve(false) : next()));
        };
        next();
      });
      c.socket.resume();
      expect(await within(c.closed, 5_000)).toBe(true);
      expect(sent).toBe(true); // not reset while sending
      const res = parseResponse(c.received());
      expect(res.status).toBe(413);
      expect(res.headers['connection']).toBe('close');
      expect(JSON.parse(res.body)).toMatchObject({ type: 'error', error: { type: 'request_too_large', message: expect.stringMatching(/proxy\.maxBodyBytes/) } });
    }
    expect(rig.upstream.requests).toHaveLength(0);
  });

  it('answers what is not HTTP 400 with a JSON error, in the provider shape once the path is known', async () => {
    const p = await rig.start();
    const garbage = await raw(p);
    garbage.socket.write('HELLO?\r\n\r\n');
    expect(await within(garbage.closed, 5_000)).toBe(true);
    const g = parseResponse(garbage.received());
    expect(g.status).toBe(400);
    expect(JSON.parse(g.body)).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', code: 'invalid_request_error' } });
    const broken = await raw(p);
    broken.socket.write('POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"a":\r\nzz\r\n');
    expect(await within(broken.closed, 5_000)).toBe(true);
    const b = parseResponse(broken.received());
    expect(b.status).toBe(400);
    expect(b.headers['connection']).toBe('close');
    expect(JSON.parse(b.body)).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/malformed/) } });
    expect(rig.upstream.requests).toHaveLength(0);
  });

  it('validates the limits with the rest of the proxy options', () => {
    const loop = { idleTimeoutMs: 1, budgetTokens: undefined, reserveRatio: 0.15, hysteresis: 0.1 };
    const o = resolveProxyOptions({ listen: '0' }, loop);
    expect(o).toMatchObject({ requestTimeoutMs: 300_000, bodyIdleTimeoutMs: 30_000, maxConnections: 128, maxBufferedBytes: 8 * 32 * 1024 * 1024 });
    expect(() => resolveProxyOptions({ listen: '0', maxBodyBytes: 4096, maxBufferedBytes: 2048 }, loop)).toThrow(/proxy\.maxBufferedBytes/);
  });
});

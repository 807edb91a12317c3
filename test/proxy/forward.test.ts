import { afterEach, describe, expect, it } from 'vitest';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ScriptedUpstream, anthropicMessage, anthropicStream } from './upstream.js';
import { readChunks, startProxy, type ProxyHarness } from './helpers.js';

const KEY = 'sk-ant-test-SECRET-0123456789abcdef';
let upstream: ScriptedUpstream;
let h: ProxyHarness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
  await upstream?.close();
});

async function setup(config: Parameters<typeof startProxy>[1] = {}): Promise<ProxyHarness> {
  upstream = new ScriptedUpstream();
  const url = await upstream.start();
  h = await startProxy(url, config);
  return h;
}

/**
 * Start the proxy in front of a real upstream server with `handler` (each request also gets the
 * number of requests served so far on its connection, this one included), run `fn`, close both.
 */
async function withRawUpstream(handler: (req: IncomingMessage, res: ServerResponse, nth: number) => void, fn: (p: ProxyHarness, server: Server) => Promise<void>, config: Parameters<typeof startProxy>[1] = {}): Promise<void> {
  const served = new WeakMap<Socket, number>();
  const server = createServer((req, res) => {
    const nth = (served.get(req.socket) ?? 0) + 1;
    served.set(req.socket, nth);
    handler(req, res, nth);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  try {
    h = await startProxy(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, config);
    upstream = new ScriptedUpstream(); // not started: afterEach closes it, not the last test's again
    await fn(h, server);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
}

/** The whole body of `req`, then `then` with it. */
function readAll(req: IncomingMessage, then: (body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => then(Buffer.concat(chunks)));
}

const anthropicBody = (stream = false) => JSON.stringify({ model: 'claude-test', max_tokens: 100, stream, messages: [{ role: 'user', content: 'hello there' }] });

describe('proxy forwarding', () => {
  it('passes other paths, status codes, headers and error bodies through unchanged, with credentials', async () => {
    const p = await setup();
    upstream.behave = (r) => (r.path.startsWith('/v1/models') ? { kind: 'json', body: { data: [{ id: 'm1' }] } } : { kind: 'json', status: 429, body: { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } } });
    const models = await fetch(`${p.url}/v1/models?limit=2`, { headers: { 'x-api-key': KEY } });
    expect(models.status).toBe(200);
    expect(await models.json()).toEqual({ data: [{ id: 'm1' }] });
    const limited = await fetch(`${p.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: anthropicBody() });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('request-id')).toBe('req_test');
    expect(await limited.json()).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } });
    expect(upstream.requests.map((r) => r.path)).toEqual(['/v1/models?limit=2', '/v1/messages']);
    for (const r of upstream.requests) expect(r.headers['x-api-key']).toBe(KEY);
    expect(upstream.requests[1]?.headers['anthropic-version']).toBe('2023-06-01');
    // a short request is forwarded byte for byte
    expect(upstream.requests[1]?.body).toBe(anthropicBody());
  });

  it('streams SSE chunk by chunk as it arrives and passes the same bytes', async () => {
    const p = await setup();
    const chunks = anthropicStream('streamed words');
    const received: (() => void)[] = [];
    const seen = chunks.map((_, i) => new Promise<void>((resolve) => (received[i] = () => resolve())));
    // the upstream sends chunk i only after the agent has read chunk i-1 through the proxy
    upstream.behave = () => ({ kind: 'sse', chunks, gate: (i) => seen[i - 1] as Promise<void> });
    const res = await fetch(`${p.url}/v1/messages`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: anthropicBody(true) });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    let got = '';
    let next = 0;
    const text = await readChunks(res, (t) => {
      got += t;
      while (next < chunks.length && got.length >= chunks.slice(0, next + 1).join('').length) received[next++]?.();
    });
    expect(text).toBe(chunks.join(''));
    expect(Buffer.from(text)).toEqual(upstream.sent[0]);
  });

  it('refuses a body over maxBodyBytes with a provider-shaped 413 and forwards nothing', async () => {
    const p = await setup({ maxBodyBytes: 2048 });
    const big = JSON.stringify({ model: 'claude-test', messages: [{ role: 'user', content: 'x'.repeat(5000) }] });
    const res = await fetch(`${p.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });
    const openai = await fetch(`${p.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
    expect(openai.status).toBe(413);
    expect(await openai.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
    expect(upstream.requests).toHaveLength(0);
    // the proxy still serves the next request
    const ok = await fetch(`${p.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: anthropicBody() });
    expect(await ok.json()).toEqual(anthropicMessage('ok'));
  });

  it('answers an unreachable upstream with a 502 and a silent one with a 504, in the provider shape', async () => {
    upstream = new ScriptedUpstream();
    const url = await upstream.start();
    await upstream.close(); // nothing listens there any more
    h = await startProxy(url);
    const res = await fetch(`${h.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: anthropicBody() });
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    await h.close();

    upstream = new ScriptedUpstream();
    h = await startProxy(await upstream.start(), { upstreamTimeoutMs: 200 });
    upstream.behave = () => ({ kind: 'hang' });
    const slow = await fetch(`${h.url}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-test', input: 'hi' }) });
    expect(slow.status).toBe(504);
    expect(await slow.json()).toMatchObject({ error: { type: 'timeout' } });
  });

  it('cuts the agent connection when the upstream resets mid-stream, and keeps serving', async () => {
    const p = await setup();
    const chunks = anthropicStream('partial');
    upstream.behave = () => ({ kind: 'reset-after', chunks: chunks.slice(0, 2) });
    const outcome = await new Promise<{ data: string; error?: string }>((resolve) => {
      const req = request(`${p.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        let data = '';
        res.on('data', (c: Buffer) => (data += c.toString()));
        res.on('end', () => resolve({ data }));
        res.on('error', (err) => resolve({ data, error: err.message }));
        res.on('aborted', () => resolve({ data, error: 'aborted' }));
      });
      req.on('error', (err) => resolve({ data: '', error: err.message }));
      req.end(anthropicBody(true));
    });
    expect(outcome.error).toBeDefined();
    expect(outcome.data).toBe(chunks.slice(0, 2).join(''));
    upstream.behave = () => ({ kind: 'json', body: anthropicMessage('again') });
    const ok = await fetch(`${p.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: anthropicBody() });
    expect(await ok.json()).toEqual(anthropicMessage('again'));
    expect(p.logs()).toContain('"outcome":"upstream-reset"');
  });

  it('answers every request when the upstream closed the idle kept-alive connection before the next request: each received once, 200', async () => {
    // A real upstream that closes each connection once it has answered (as a provider whose
    // keep-alive idle timeout ran out); the next request arrives only after that close.
    const received: string[] = [];
    let closed = 0;
    const answer = (req: IncomingMessage, res: ServerResponse): void =>
      readAll(req, (body) => {
        received.push(body.toString());
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: [] }), () => req.socket.end());
      });
    await withRawUpstream(answer, async (p, server) => {
      server.on('connection', (c: Socket) => c.on('close', () => closed++));
      for (let i = 0; i < 3; i++) {
        const r = await fetch(`${p.url}/v1/models`, { method: 'POST', headers: { 'x-api-key': KEY }, body: `request ${i}` });
        expect(r.status, `request ${i}`).toBe(200);
        expect(await r.json()).toEqual({ data: [] });
        while (closed < i + 1) await new Promise((r) => setTimeout(r, 5));
      }
      expect(received).toEqual(['request 0', 'request 1', 'request 2']);
    });
  });

  it('sends a request again when the upstream dropped the reused connection before taking all of it: received once, 200', async () => {
    // The upstream refuses a second request on a connection as soon as its headers arrive,
    // unread; the body is larger than the loopback socket buffers, so the reset comes before
    // the proxy has written the whole request: the upstream cannot have handled any of it.
    const received: number[] = [];
    const refuseRepeat = (req: IncomingMessage, res: ServerResponse, nth: number): void => {
      if (nth > 1) return void req.socket.resetAndDestroy();
      readAll(req, (body) => {
        received.push(body.length);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    };
    const big = Buffer.alloc(48 * 1024 * 1024, 7);
    await withRawUpstream(
      refuseRepeat,
      async (p) => {
        for (const body of [Buffer.from('small'), big]) {
          const r = await fetch(`${p.url}/v1/files`, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/octet-stream' }, body });
          expect(r.status).toBe(200);
          await r.text();
        }
      },
      { maxBodyBytes: 64 * 1024 * 1024 },
    );
    expect(received).toEqual([5, big.length]);
  });

  it('never sends a (paid) POST twice when the upstream received it in full and then reset the kept-alive connection: 502, received once', async () => {
    // The upstream reads the whole second request on a reused connection (it would start a
    // completion and bill it), then resets the connection before answering.
    const received: string[] = [];
    const resetRepeat = (req: IncomingMessage, res: ServerResponse, nth: number): void =>
      readAll(req, (body) => {
        received.push(body.toString());
        if (nth > 1) req.socket.resetAndDestroy();
        else res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    await withRawUpstream(resetRepeat, async (p) => {
      const post = (): Promise<Response> => fetch(`${p.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: anthropicBody() });
      expect((await post()).status).toBe(200);
      received.length = 0;
      const second = await post();
      expect(second.status).toBe(502);
      expect((await second.json()) as unknown).toMatchObject({ type: 'error', error: { type: 'api_error' } });
      // The upstream had the whole request before the reset: sending it again would bill it twice.
      expect(received).toHaveLength(1);
    });
  });

  it('stops the upstream request when the agent hangs up', async () => {
    const p = await setup();
    upstream.behave = () => ({ kind: 'hang' });
    const ac = new AbortController();
    const pending = fetch(`${p.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: anthropicBody(), signal: ac.signal });
    while (upstream.requests.length === 0) await new Promise((r) => setTimeout(r, 10));
    ac.abort();
    await expect(pending).rejects.toThrow();
    await upstream.closed[0];
  });

  it('never logs or stores the credentials it forwards', async () => {
    const p = await setup();
    for (const headers of [{ 'x-api-key': KEY }, { authorization: `Bearer ${KEY}` }] as Record<string, string>[]) {
      await (await fetch(`${p.url}/v1/messages`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: anthropicBody() })).text();
    }
    expect(upstream.requests).toHaveLength(2);
    expect(p.logs().length).toBeGreaterThan(0);
    expect(p.everything()).not.toContain(KEY);
    expect(p.everything()).not.toContain('SECRET');
  });
});

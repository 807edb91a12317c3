/**
 * The proxy's cost and effect, loopback only: the real daemon process with `--proxy`, an
 * in-process scripted Anthropic upstream answering every request with the same short SSE
 * stream, and N agent sessions replaying a long task with bulky tool outputs. Each request is
 * sent twice — straight to the upstream and through the proxy — so the added latency (time to
 * first byte and to the whole response) is a paired difference. Tokens saved per request and
 * cache-breaking rewrites per 100 requests come from the daemon's own status; RSS is the
 * daemon's with every session live.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContextdClient } from '../ipc/client.js';
import { rssMiB, startDaemonProcess, summarize } from './harness.js';
import { anthropicRequest, scriptedTurns } from './proxy-agent.js';

export interface ProxyBenchOptions {
  readonly sessions?: number;
  readonly turns?: number;
  readonly budgetTokens?: number;
  /** Lines of each tool output (≈ 20 tokens a line). */
  readonly linesPerOutput?: number;
}

const SSE = [
  'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_b","type":"message","role":"assistant","model":"claude-bench","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":0}}}\n\n',
  'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"next step"}}\n\n',
  'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
  'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}\n\n',
  'event: message_stop\ndata: {"type":"message_stop"}\n\n',
];

/** A loopback upstream that reads the request and streams the fixed answer. */
async function startUpstream(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const chunk of SSE) res.write(chunk);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** POST a body and time the first response byte and the end. */
function timed(url: string, body: Buffer): Promise<{ ttfbMs: number; totalMs: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let ttfb = -1;
    let bytes = 0;
    const req = request(`${url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': body.length, 'x-api-key': 'bench-key' } }, (res) => {
      res.on('data', (c: Buffer) => {
        if (ttfb < 0) ttfb = performance.now() - t0;
        bytes += c.length;
      });
      res.on('end', () => resolve({ ttfbMs: ttfb, totalMs: performance.now() - t0, bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

export async function benchProxy(o: ProxyBenchOptions = {}): Promise<Record<string, unknown>> {
  const sessions = o.sessions ?? 20;
  const turnsPerSession = o.turns ?? 40;
  const budget = o.budgetTokens ?? 60_000;
  const turns = scriptedTurns(turnsPerSession, o.linesPerOutput ?? 100);
  const dir = mkdtempSync(join(tmpdir(), 'contextd-bench-proxy-'));
  const upstream = await startUpstream();
  const port = await freePort();
  const watch = join(dir, 'watch');
  mkdirSync(watch);
  const socket = join(dir, 'contextd.sock');
  const daemon = await startDaemonProcess(['--watch', watch, '--socket', socket, '--state', join(dir, 'state'), '--budget', String(budget), '--proxy', `127.0.0.1:${port}`, '--anthropic-upstream', upstream.url]);
  const proxyUrl = `http://127.0.0.1:${port}`;
  const added = { ttfb: [] as number[], total: [] as number[] };
  const direct = { ttfb: [] as number[], total: [] as number[] };
  const proxied = { ttfb: [] as number[], total: [] as number[] };
  let requestBytes = 0;
  try {
    // Sessions take turns, as parallel agents would; requests of one session are sequential.
    for (let k = 0; k <= turnsPerSession; k++) {
      for (let s = 0; s < sessions; s++) {
        const body = Buffer.from(JSON.stringify(anthropicRequest(turns, k, `bench-session-${s}`)));
        requestBytes = Math.max(requestBytes, body.length);
        const d = await timed(upstream.url, body);
        const p = await timed(proxyUrl, body);
        if (p.bytes !== d.bytes) throw new Error(`proxied response has ${p.bytes} bytes, direct ${d.bytes}`);
        direct.ttfb.push(d.ttfbMs);
        direct.total.push(d.totalMs);
        proxied.ttfb.push(p.ttfbMs);
        proxied.total.push(p.totalMs);
        added.ttfb.push(p.ttfbMs - d.ttfbMs);
        added.total.push(p.totalMs - d.totalMs);
      }
    }
    const client = new ContextdClient({ socketPath: socket, clientInfo: { name: 'bench-proxy', version: '1' }, reconnect: false, requestTimeoutMs: 30_000 });
    await client.connect();
    const status = (await client.status()) as { sessions: { source?: string }[]; proxy?: Record<string, number> };
    await client.close();
    return {
      sessions,
      requestsPerSession: turnsPerSession + 1,
      budgetTokens: budget,
      largestRequestBytes: requestBytes,
      addedLatencyMs: { firstByte: summarize(added.ttfb), whole: summarize(added.total) },
      directMs: { firstByte: summarize(direct.ttfb), whole: summarize(direct.total) },
      proxiedMs: { firstByte: summarize(proxied.ttfb), whole: summarize(proxied.total) },
      proxiedSessionsLive: status.sessions.filter((x) => x.source === 'proxy').length,
      proxy: status.proxy,
      daemonRssMiB: rssMiB(daemon.proc.pid),
    };
  } finally {
    await daemon.stop();
    await new Promise<void>((resolve) => upstream.server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  }
}

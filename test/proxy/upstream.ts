/**
 * A small scripted provider for the proxy tests: a real HTTP server on 127.0.0.1, port 0.
 * It records every request (headers and raw body) and answers each one with the behaviour
 * the test scripted: JSON, an SSE stream sent in steps, an error status, a reset in the
 * middle of a stream, or silence.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { LoopbackServer } from './loopback.js';

export interface Recorded {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export type Behaviour =
  | { kind: 'json'; status?: number; body: unknown }
  /** SSE: chunks written one by one; before each chunk after the first, `gate(i)` is awaited. */
  | { kind: 'sse'; chunks: string[]; gate?: (i: number) => Promise<void> }
  | { kind: 'reset-after'; chunks: string[] }
  | { kind: 'hang' };

export class ScriptedUpstream {
  readonly requests: Recorded[] = [];
  private readonly server: Server;
  private readonly loopback: LoopbackServer;
  /** Answers requests; the default echoes a small Anthropic message. */
  behave: (r: Recorded) => Behaviour = () => ({ kind: 'json', body: anthropicMessage('ok') });
  /** Bytes written in the body of each response, in order. */
  readonly sent: Buffer[] = [];
  /** Resolves when a request's response stream closed on the upstream side. */
  readonly closed: Promise<void>[] = [];

  constructor() {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.loopback = new LoopbackServer(this.server);
  }

  start(): Promise<string> {
    return this.loopback.start();
  }

  close(): Promise<void> {
    return this.loopback.close();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rec: Recorded = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
    this.requests.push(rec);
    const out: Buffer[] = [];
    this.closed.push(new Promise((resolve) => res.on('close', () => resolve())));
    const b = this.behave(rec);
    const write = (s: string): void => {
      const buf = Buffer.from(s, 'utf8');
      out.push(buf);
      res.write(buf);
    };
    switch (b.kind) {
      case 'json': {
        const body = JSON.stringify(b.body);
        res.writeHead(b.status ?? 200, { 'content-type': 'application/json', 'request-id': 'req_test' });
        write(body);
        res.end();
        break;
      }
      case 'sse':
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        for (let i = 0; i < b.chunks.length; i++) {
          if (i > 0 && b.gate) await b.gate(i);
          write(b.chunks[i] as string);
        }
        res.end();
        break;
      case 'reset-after':
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const c of b.chunks) write(c);
        await new Promise((r) => setTimeout(r, 20));
        res.socket?.destroy();
        break;
      case 'hang':
        break;
    }
    this.sent.push(Buffer.concat(out));
  }
}

/** A non-streaming Anthropic Messages answer with one text block. */
export function anthropicMessage(text: string): unknown {
  return { id: 'msg_test', type: 'message', role: 'assistant', model: 'claude-test', content: [{ type: 'text', text }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 2 } };
}

/** SSE events of an Anthropic streamed answer with one text block, one chunk per event. */
export function anthropicStream(text: string): string[] {
  const ev = (name: string, data: unknown): string => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  return [
    ev('message_start', { type: 'message_start', message: { id: 'msg_s', type: 'message', role: 'assistant', model: 'claude-test', content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 0 } } }),
    ev('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
    ev('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }),
    ev('content_block_stop', { type: 'content_block_stop', index: 0 }),
    ev('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 3 } }),
    ev('message_stop', { type: 'message_stop' }),
  ];
}

/**
 * A recording HTTP relay for end-to-end tests: real sockets on 127.0.0.1, port 0. It passes
 * every request to `target` and every response back unchanged, and keeps the response body
 * bytes by request number. Placed on both sides of the proxy (agent → relay → proxy → relay →
 * provider), it shows that what the agent received is byte for byte what the provider sent.
 * The number travels in the `x-relay-seq` request header (the first relay sets it).
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { resendGuard } from '../../src/proxy/forward.js';
import { LoopbackServer } from './loopback.js';

export const SEQ_HEADER = 'x-relay-seq';

export class RecordingRelay {
  /** Response body bytes by sequence number, once the response ended. */
  readonly bodies = new Map<string, Buffer>();
  /** Request body bytes by sequence number (what the client sent through this relay). */
  readonly requestBodies = new Map<string, Buffer>();
  private readonly server: Server;
  private readonly loopback: LoopbackServer;
  private seq = 0;

  constructor(private readonly target: string, private readonly assignSeq: boolean) {
    this.server = createServer((req, res) => {
      const headers = { ...req.headers };
      if (this.assignSeq) headers[SEQ_HEADER] = String(++this.seq);
      const seq = String(headers[SEQ_HEADER] ?? '?');
      const url = new URL(req.url ?? '/', this.target);
      headers['host'] = url.host;
      const onResponse = (upRes: IncomingMessage): void => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        const chunks: Buffer[] = [];
        upRes.on('data', (c: Buffer) => {
          chunks.push(c);
          res.write(c);
        });
        upRes.on('end', () => {
          this.bodies.set(seq, Buffer.concat(chunks));
          res.end();
        });
        upRes.on('error', () => res.destroy());
      };
      // The whole request body first, so a request the target cannot have handled (its
      // kept-alive connection closed under it) is sent again on a new one by the proxy's own
      // rule, not cut: the relay must not add failures of its own to what it records, nor send
      // the target a request twice.
      const sent: Buffer[] = [];
      req.on('data', (c: Buffer) => sent.push(c));
      req.on('end', () => {
        const body = Buffer.concat(sent);
        this.requestBodies.set(seq, body);
        const send = (retries: number): void => {
          const up = request(url, { method: req.method, headers }, onResponse);
          const mayResend = resendGuard(up);
          up.on('error', (err: NodeJS.ErrnoException) => {
            if (mayResend(err) && retries > 0 && !res.headersSent) send(retries - 1);
            else res.destroy();
          });
          up.end(body);
        };
        send(2);
      });
    });
    this.loopback = new LoopbackServer(this.server);
  }

  start(): Promise<string> {
    return this.loopback.start();
  }

  close(): Promise<void> {
    return this.loopback.close();
  }
}

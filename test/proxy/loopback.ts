/** An HTTP server of a test on 127.0.0.1, port 0, whose close() also cuts open connections. */
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export class LoopbackServer {
  private readonly sockets = new Set<Socket>();

  constructor(private readonly server: Server) {
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  /** Listen; resolves with `http://127.0.0.1:<port>`. */
  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Start a real proxy (with a real SQLite archive and a log file) in a fresh temp dir. */
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createExtractiveSummarizer } from '../../src/compact/index.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { ProxyServer, resolveProxyOptions, type ProxyConfig } from '../../src/proxy/index.js';
import { Archive, openDb, type Db } from '../../src/store/index.js';
import { createLogger } from '../../src/util/logger.js';

export interface ProxyHarness {
  readonly proxy: ProxyServer;
  readonly url: string;
  readonly dir: string;
  readonly db: Db;
  readonly archive: Archive;
  /** Everything logged so far (NDJSON). */
  logs(): string;
  /** Every byte under the temp dir (state + logs), as latin1 text for grepping. */
  everything(): string;
  close(): Promise<void>;
}

const counter = createTokenCounter('o200k_base');

export async function startProxy(upstream: string, config: Partial<ProxyConfig> = {}, loop: { budgetTokens?: number; reserveRatio?: number; hysteresis?: number } = {}): Promise<ProxyHarness> {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-proxy-'));
  const logFile = join(dir, 'proxy.log');
  const logger = createLogger({ level: 'debug', destination: pino.destination({ dest: logFile, sync: true }) });
  const db = openDb(join(dir, 'contextd.db'));
  const archive = new Archive(db);
  const options = resolveProxyOptions(
    { listen: '127.0.0.1:0', upstreams: { anthropic: upstream, openai: upstream }, ...config },
    { idleTimeoutMs: 60_000, budgetTokens: loop.budgetTokens, reserveRatio: loop.reserveRatio ?? 0.15, hysteresis: loop.hysteresis ?? 0.1 },
  );
  if (!options) throw new Error('proxy options not resolved');
  const proxy = new ProxyServer(options, { logger, tokenCounter: counter, summarizer: createExtractiveSummarizer(), archive });
  await proxy.listen();
  const { port } = proxy.address();
  const read = (p: string): string => readFileSync(p).toString('latin1');
  return {
    proxy,
    url: `http://127.0.0.1:${port}`,
    dir,
    db,
    archive,
    logs: () => readFileSync(logFile, 'utf8'),
    everything: () => {
      db.pragma('wal_checkpoint(TRUNCATE)');
      const walk = (d: string): string[] => readdirSync(d).flatMap((n) => (statSync(join(d, n)).isDirectory() ? walk(join(d, n)) : [join(d, n)]));
      return walk(dir).map(read).join('\n');
    },
    close: async () => {
      await proxy.close(500);
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Read a fetch body chunk by chunk, calling `onChunk` with each as it arrives. */
export async function readChunks(res: Response, onChunk?: (text: string, i: number) => void): Promise<string> {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const dec = new TextDecoder();
  let all = '';
  for (let i = 0; ; i++) {
    const { done, value } = await reader.read();
    if (done) break;
    const t = dec.decode(value, { stream: true });
    all += t;
    onChunk?.(t, i);
  }
  return all;
}

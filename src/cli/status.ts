import type { Command } from 'commander';
import { ContextdClient, type StatusResult } from '../ipc/client.js';
import { findSocketPath } from '../ipc/paths.js';
import { pct, printJson, printLine } from './output.js';

/** Connect to the running daemon (no reconnects: a CLI call either reaches it or says so). */
export async function connectCli(socket: string | undefined, name: string): Promise<ContextdClient> {
  const client = new ContextdClient({ socketPath: socket ?? findSocketPath(), clientInfo: { name, version: '1' }, reconnect: false, requestTimeoutMs: 10_000 });
  await client.connect();
  return client;
}

/** A text bar of the used share of the window. */
export function usageBar(headroom: number, width = 20): string {
  const used = Math.max(0, Math.min(width, Math.round((1 - headroom) * width)));
  return `${'█'.repeat(used)}${'░'.repeat(width - used)}`;
}

type SessionRow = StatusResult['sessions'][number] & Record<string, unknown>;

/** The human rendering of daemon.status, shared by `status` and `top`. */
export function renderStatus(status: StatusResult, now = Date.now()): string[] {
  const s = status as StatusResult & { socket?: string; reserveRatio?: number; softWatermark?: number };
  const lines = [
    `contextd ${status.server.version}  up ${status.uptimeSeconds}s  socket ${s.socket ?? '?'}  reserve ${pct(s.reserveRatio ?? 0.15)}  soft ${pct(s.softWatermark ?? 0.6)}  sessions ${status.sessions.length}`,
    '',
    `${'session'.padEnd(38)} ${'used'.padEnd(20)} ${'tokens/total'.padStart(17)} ${'free'.padStart(6)} ${'sect'.padStart(5)}  last edit`,
  ];
  const rows = [...(status.sessions as SessionRow[])].sort((a, b) => Number(a['headroom']) - Number(b['headroom']));
  for (const r of rows) {
    const headroom = Number(r['headroom']);
    const edit = r['lastEdit'] as { reason: string; at: number } | null | undefined;
    const editText = edit ? `${edit.reason} (${Math.max(0, Math.round((now - edit.at) / 1000))}s ago)` : '-';
    const id = String(r['sessionId']);
    const linked = typeof r['linkedSession'] === 'string' ? `  linked ${r['linkedSession']}` : '';
    const failure = r['failure'] as { code: string } | null | undefined;
    const released = failure ? `  ${failure.code}: lines not applied, rebuilt from its transcript` : r['inMemory'] === false ? '  released from memory' : '';
    lines.push(
      `${(id.length > 38 ? `${id.slice(0, 37)}…` : id).padEnd(38)} ${usageBar(headroom)} ${`${String(r['tokens'])}/${String(r['total'])}`.padStart(17)} ${pct(headroom).padStart(6)} ${String(r['sections']).padStart(5)}  ${editText}${linked}${released}`,
    );
  }
  if (rows.length === 0) lines.push('(no live sessions)');
  const proxy = (status as { proxy?: { listen: string; requests: number; plansApplied: number; tokensSavedPerRequest: number; cacheBreaksPer100: number; upstreamErrors: number } }).proxy;
  if (proxy) {
    lines.push('', `proxy ${proxy.listen}  requests ${proxy.requests}  plans applied ${proxy.plansApplied}  saved/request ${proxy.tokensSavedPerRequest} tokens  cache-breaking rewrites ${proxy.cacheBreaksPer100}/100  upstream errors ${proxy.upstreamErrors}`);
  }
  return lines;
}

/** `contextd status [--socket P] [--json]`: ask the running daemon. */
export function registerStatus(program: Command): void {
  program
    .command('status')
    .description('ask the running daemon for its sessions and their headroom')
    .option('--socket <path>', 'daemon socket (default: $CONTEXTD_SOCKET, $XDG_RUNTIME_DIR/contextd.sock, ...)')
    .option('--json', 'print one JSON document')
    .action(async (flags: { socket?: string; json?: boolean }) => {
      const client = await connectCli(flags.socket, 'contextd-status');
      try {
        const status = await client.status();
        if (flags.json) printJson(status);
        else for (const l of renderStatus(status)) printLine(l);
      } finally {
        await client.close();
      }
    });
}

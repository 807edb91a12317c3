import type { Command } from 'commander';
import { describeError } from '../util/errors.js';
import { connectCli, renderStatus } from './status.js';
import { printLine } from './output.js';

/** `contextd top`: a live view of every session's headroom, refreshed until q or Ctrl-C. */
export function registerTop(program: Command): void {
  program
    .command('top')
    .description('live terminal view of every session: headroom bar, tokens/total, sections, last edit')
    .option('--socket <path>', 'daemon socket')
    .option('--interval <ms>', 'refresh interval', (v) => Math.max(100, Number(v) || 1000), 1000)
    .option('--once', 'print one frame and exit (for scripts and non-terminals)')
    .action(async (flags: { socket?: string; interval: number; once?: boolean }) => {
      const client = await connectCli(flags.socket, 'contextd-top');
      const tty = process.stdout.isTTY && !flags.once;
      const frame = async () => {
        const lines = renderStatus(await client.status());
        if (tty) process.stdout.write('\x1b[H\x1b[2J');
        for (const l of lines) printLine(l);
        if (tty) printLine('\n(q to quit)');
      };
      if (!tty) {
        try {
          await frame();
        } finally {
          await client.close();
        }
        return;
      }
      await new Promise<void>((resolve) => {
        let drawing = false;
        const tick = () => {
          if (drawing) return; // a slow daemon: skip a frame rather than pile them up
          drawing = true;
          frame()
            .catch((err: unknown) => {
              printLine(`contextd top: ${describeError(err)}`);
              process.exitCode = 1;
              stop();
            })
            .finally(() => (drawing = false));
        };
        const timer = setInterval(tick, flags.interval);
        const onKey = (key: Buffer) => {
          const k = key.toString();
          if (k === 'q' || k === '\u0003') stop();
        };
        const stop = () => {
          clearInterval(timer);
          process.stdin.off('data', onKey);
          if (process.stdin.isTTY) process.stdin.setRawMode(false);
          process.stdin.pause();
          resolve();
        };
        if (process.stdin.isTTY) process.stdin.setRawMode(true);
        process.stdin.resume();
        process.stdin.on('data', onKey);
        tick();
      });
      await client.close();
    });
}

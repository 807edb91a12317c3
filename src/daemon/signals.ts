import type { Logger } from '../util/logger.js';
import { describeError } from '../util/errors.js';

export interface SignalTarget {
  stop(reason: string): Promise<void>;
  reload(): void;
}

/**
 * SIGTERM / SIGINT drain and exit 0; SIGHUP reloads the config; a second SIGTERM while
 * draining exits at once with 1. Returns a function that removes the handlers.
 */
export function installSignalHandlers(target: SignalTarget, logger: Logger, exit: (code: number) => void = (c) => process.exit(c)): () => void {
  let stopping = false;
  const onStop = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second stop signal while draining: exiting now');
      exit(1);
      return;
    }
    stopping = true;
    target.stop(signal).then(
      () => exit(0),
      (err: unknown) => {
        logger.error({ signal, err: describeError(err) }, 'shutdown failed');
        exit(1);
      },
    );
  };
  const onHup = () => {
    try {
      target.reload();
    } catch (err) {
      logger.error({ err: describeError(err) }, 'reload failed: keeping the previous configuration');
    }
  };
  process.on('SIGTERM', onStop);
  process.on('SIGINT', onStop);
  process.on('SIGHUP', onHup);
  return () => {
    process.off('SIGTERM', onStop);
    process.off('SIGINT', onStop);
    process.off('SIGHUP', onHup);
  };
}

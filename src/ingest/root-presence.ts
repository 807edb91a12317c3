/**
 * Follows whether one watch root exists, so a root that is missing at start (or removed later)
 * is picked up when it appears. chokidar watches a missing root only when its parent exists,
 * and never notices a root that is removed and created again; this watches the root's nearest
 * existing ancestor, shallowly (depth 0, only the entries on the way to the root), and moves
 * down as folders appear (`mkdir -p` in one go included) or up as they vanish.
 */
import { stat } from 'node:fs/promises';
import { dirname, sep } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import type { Logger } from 'pino';
import { describeError } from '../util/errors.js';

export interface RootPresenceHandlers {
  /** The root exists now (it did not before). */
  appeared(root: string): void;
  /** The root is gone (it existed before). */
  vanished(root: string): void;
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

/** The nearest strict ancestor of `p` that exists (the filesystem root at worst). */
async function nearestExistingAncestor(p: string): Promise<string> {
  let dir = dirname(p);
  while (!(await exists(dir))) {
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return dir;
}

function onTheWay(p: string, root: string): boolean {
  return p === root || root.startsWith(p.endsWith(sep) ? p : p + sep);
}

/** Watches the way to one root and reports when the root appears or vanishes. */
export class RootPresence {
  private watcher: FSWatcher | undefined;
  private anchor: string | undefined;
  private present: boolean;
  private closed = false;
  private queue: Promise<void> = Promise.resolve();

  /** `present`: whether the root existed when the caller started watching it. */
  constructor(
    readonly root: string,
    present: boolean,
    private readonly handlers: RootPresenceHandlers,
    private readonly logger: Logger,
  ) {
    this.present = present;
  }

  /** Starts watching; resolves once the watch on the nearest existing ancestor is ready. */
  start(): Promise<void> {
    return this.evaluate();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
    await this.watcher?.close().catch(() => undefined);
    this.watcher = undefined;
  }

  /** Re-checks the root and the ancestor to watch (serialized: one check at a time). */
  private evaluate(): Promise<void> {
    this.queue = this.queue.then(() => this.check()).catch((err: unknown) => this.logger.warn({ root: this.root, err: describeError(err) }, 'watch root check failed'));
    return this.queue;
  }

  private async check(): Promise<void> {
    // Move the shallow watch until it sits on the nearest existing ancestor; a folder created
    // while the new watch was starting is seen by the check that follows its `ready`.
    for (;;) {
      if (this.closed) return;
      const anchor = await nearestExistingAncestor(this.root);
      if (anchor === this.anchor) break;
      await this.watcher?.close().catch(() => undefined);
      this.anchor = anchor;
      this.watcher = await this.watchShallow(anchor);
    }
    const now = await exists(this.root);
    if (this.closed || now === this.present) return;
    this.present = now;
    if (now) this.handlers.appeared(this.root);
    else this.handlers.vanished(this.root);
  }

  private async watchShallow(anchor: string): Promise<FSWatcher> {
    const root = this.root;
    const w = watch(anchor, {
      persistent: true,
      ignoreInitial: true,
      depth: 0,
      // Only the entries on the way to the root matter (not the root's siblings).
      ignored: (p: string) => !(p === anchor || onTheWay(p, root)),
    });
    const recheck = (p: string): void => {
      if (onTheWay(p, root) || p === anchor) void this.evaluate();
    };
    w.on('addDir', recheck);
    w.on('unlinkDir', recheck);
    w.on('add', recheck);
    w.on('unlink', recheck);
    w.on('error', (err) => this.logger.debug({ anchor, err: describeError(err) }, 'watch root ancestor error'));
    await new Promise<void>((resolve) => w.once('ready', () => resolve()));
    return w;
  }
}

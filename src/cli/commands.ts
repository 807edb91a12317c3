import type { Command } from 'commander';
import { registerDaemon } from './daemon.js';
import { registerInspect } from './inspect.js';
import { registerCompact } from './compact.js';
import { registerHeadroom } from './headroom.js';
import { registerRecall } from './recall.js';
import { registerDemo } from './demo.js';
import { registerStatus } from './status.js';
import { registerTop } from './top.js';
import { registerBench } from './bench.js';
import { registerWarm } from './warm.js';
import { registerInstall } from './install.js';
import { registerFork } from './fork.js';

/** Every subcommand registers itself on the program; order is the order in `--help`. */
export type RegisterCommand = (program: Command) => void;

export const COMMANDS: RegisterCommand[] = [registerDaemon, registerInspect, registerCompact, registerStatus, registerTop, registerHeadroom, registerRecall, registerWarm, registerFork, registerInstall, registerBench, registerDemo];

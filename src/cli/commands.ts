import type { Command } from 'commander';

/** Every subcommand registers itself on the program; order is the order in `--help`. */
export type RegisterCommand = (program: Command) => void;

export const COMMANDS: RegisterCommand[] = [];

// The subcommands, in the order `ragen --help` lists them. Each module exports `register(program)`.
import type { Command } from 'commander';

export const commands: ((program: Command) => void)[] = [];

// The `ragen` command: one commander program, one file per subcommand under ./commands.
import { Command, CommanderError } from 'commander';
import '../envs/index.js'; // the built-in environments register first, in their order
import { fileSystemError, RagenError } from '../util/index.js';
import { commands } from './commands/index.js';

/** Build the program (exported for tests and for `--help` generation). */
export function program(): Command {
  const prog = new Command('ragen')
    .description('Train LLM agents by multi-turn reinforcement learning (StarPO), in TypeScript.')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  for (const register of commands) register(prog);
  return prog;
}

/** Run the CLI on `argv` (without `node` and the script path). Returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  try {
    await program().parseAsync(argv, { from: 'user' });
    return 0;
  } catch (caught) {
    if (caught instanceof CommanderError) return caught.exitCode;
    // A filesystem fault that no command annotated still gets its sentence (path, reason, fix) instead of a stack.
    const err = fileSystemError(caught, 'read or write a file');
    if (err instanceof RagenError) {
      console.error(`ragen: ${err.message}`);
      return 2;
    }
    throw err;
  }
}

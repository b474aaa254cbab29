// The unit tier's rule, enforced (test/unit-setup.ts installs it for `npm run test:unit`): a test there starts no
// child process and opens no server. Each such call throws a message naming the call and the fix, and is recorded so
// the test that made it fails even where the code under test catches the error.
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

/** The child_process functions that start a process. */
export const PROCESS_STARTERS = ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const;

const FIX =
  'the unit tier (npm run test:unit) runs pure tests only: exclude this file in vitest.unit.config.ts, saying why ' +
  '(`npm test` still runs it), or gate the test on a helper that skips it there (as testSandbox does)';

/** Make every process start and server listen throw, recording each in `refused`; returns the undo. */
export function forbidProcessesAndServers(refused: string[]): () => void {
  const refuse = (what: string): never => {
    refused.push(what);
    throw new Error(`${what} was refused: ${FIX}.`);
  };
  const cp = childProcess as unknown as Record<string, unknown>;
  const real = PROCESS_STARTERS.map((name) => [name, cp[name]] as const);
  for (const name of PROCESS_STARTERS) {
    cp[name] = (command: unknown) => refuse(`child_process.${name}(${JSON.stringify(String(command))})`);
  }
  const listen = net.Server.prototype.listen;
  net.Server.prototype.listen = function refusedListen(...args: unknown[]): never {
    const shown = args.filter((a) => typeof a !== 'function').map((a) => JSON.stringify(a));
    return refuse(`a server's listen(${shown.join(', ')})`);
  } as typeof listen;
  syncBuiltinESMExports(); // named imports (`import { spawn } from 'node:child_process'`) see the change too
  return () => {
    for (const [name, fn] of real) cp[name] = fn;
    net.Server.prototype.listen = listen;
    syncBuiltinESMExports();
  };
}

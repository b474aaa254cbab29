// checkEnv over the wire for every built-in env against an EnvServer on loopback, and determinism across the
// wire: the same seeds and actions give the same trajectory remotely as in-process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkEnv, envSpec, listEnvs, makeEnv, resolveEnvConfig, Rng, type Env } from '../../index.js';
import { testSandbox } from '../../sandbox/testing.js';
import { EnvServer, registerRemoteEnv, RemoteEnv } from './index.js';

// As in check-env.test.ts: envs that need an outside service (Lean) are left to their own tests; DeepCoder judges in
// the sandbox, so it runs where bubblewrap does (testSandbox fails CI without it).
const builtins = listEnvs()
  .map((e) => e.id)
  .filter((id) => !id.includes('@') && !envSpec(id).requires && (id !== 'DeepCoder' || testSandbox()));
let server: EnvServer;
let port: number;

beforeAll(async () => {
  server = new EnvServer({ envIds: builtins, port: 0, log: () => {} });
  port = await server.listen();
});
afterAll(() => server.close());

describe('checkEnv over the wire', () => {
  for (const id of builtins) {
    it(`${id} served by ragen env serve passes checkEnv through RemoteEnv`, async () => {
      const url = `ws://127.0.0.1:${port}/${id}`;
      const spec = envSpec(id);
      const config = resolveEnvConfig(id);
      const solve = spec.solve ? (seed: number, mode: 'train' | 'val') => spec.solve!(config, seed, mode) : undefined;
      await checkEnv(new RemoteEnv(url), {
        seeds: id === 'DeepCoder' ? [0] : [0, 1],
        solve,
        make: () => new RemoteEnv(url),
      }); // DeepCoder's judging is slow
    });
  }
});

/**
 * Reset with `seed` in `mode`, then play up to 12 actions drawn from the env's names (or the solver's plan), recording
 * everything, images included (they cross the wire as PNG and must come back byte for byte).
 */
async function play(env: Env, id: string, seed: number, mode: 'train' | 'val'): Promise<unknown[]> {
  const out: unknown[] = [await env.reset({ seed, mode }), env.render(), env.instruction, env.legend, env.actionNames];
  const plan = envSpec(id).solve?.(resolveEnvConfig(id), seed, mode);
  const rng = new Rng(seed + 1);
  for (let t = 0; t < 12; t++) {
    const names = env.actionNames;
    const action = plan && t < plan.length && t % 3 !== 2 ? plan[t]! : names ? rng.choice(names) : `${t}`;
    const r = await env.step(action);
    out.push(action, r, env.render(), env.actionNames, env.observationSpace);
    if (r.terminated || r.truncated) break;
  }
  await env.close();
  return out;
}

describe('determinism across the wire', () => {
  for (const id of builtins) {
    it(`${id}: same seeds and actions give the same trajectory remotely as in-process`, async () => {
      const remoteId = await registerRemoteEnv(`remote:ws://127.0.0.1:${port}/${id}`);
      for (const [seed, mode] of [
        [3, 'train'],
        [17, 'train'],
        [5, 'val'],
      ] as const) {
        const local = await play(makeEnv(id), id, seed, mode);
        const remote = await play(makeEnv(remoteId), id, seed, mode);
        expect(remote).toEqual(local);
      }
    });
  }
});

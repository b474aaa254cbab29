// Test helpers: a listening gateway over the shipped tiny model (local engine), or over an engine a test scripts.
import type { Engine } from '../engine/index.js';
import { localServeTarget } from '../serve/index.js';
import { TINY_MODEL_DIR } from '../serve/testing.js';
import type { Tokenizer } from '../tokenizer/index.js';
import { Gateway, type GatewayOptions } from './server.js';

/** A gateway over ragen-tiny on loopback, listening; close it after the tests. */
export async function tinyGateway(options: Partial<GatewayOptions> = {}): Promise<Gateway> {
  const target = await localServeTarget(TINY_MODEL_DIR, (d) => d, { name: 'tiny' });
  const gateway = new Gateway({ ...target, ...options });
  await gateway.listen(0);
  return gateway;
}

/** A gateway serving `engine` (a scripted one, usually) as model `policy` with a 1024-token context, listening. */
export async function scriptedGateway(
  engine: Engine,
  tokenizer: Tokenizer,
  options: Partial<GatewayOptions> = {},
): Promise<Gateway> {
  const gateway = new Gateway({
    engine,
    tokenizer,
    modelName: 'policy',
    contextLength: 1024,
    vocabSize: tokenizer.vocabSize,
    ...options,
  });
  await gateway.listen(0);
  return gateway;
}

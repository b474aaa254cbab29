// Test helper: a listening gateway over the shipped tiny model (local engine), with the options a test needs.
import { localServeTarget } from '../serve/index.js';
import { TINY_MODEL_DIR } from '../serve/testing.js';
import { Gateway, type GatewayOptions } from './server.js';

/** A gateway over ragen-tiny on loopback, listening; close it after the tests. */
export async function tinyGateway(options: Partial<GatewayOptions> = {}): Promise<Gateway> {
  const target = await localServeTarget(TINY_MODEL_DIR, (d) => d, { name: 'tiny' });
  const gateway = new Gateway({ ...target, ...options });
  await gateway.listen(0);
  return gateway;
}

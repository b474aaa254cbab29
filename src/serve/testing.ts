// Test helpers of the server: the shipped tiny checkpoint served on a free loopback port.
import { fileURLToPath } from 'node:url';
import { localServeTarget } from './load.js';
import { OpenAIServer, type ServeOptions } from './server.js';

/** models/ragen-tiny (a 1k-vocabulary Qwen2-style checkpoint with its tokenizer and chat template). */
export const TINY_MODEL_DIR = fileURLToPath(new URL('../../models/ragen-tiny', import.meta.url));

/** Serve models/ragen-tiny on 127.0.0.1 (a free port) as `tiny`; `options` override the limits. */
export async function serveTiny(
  options: Partial<ServeOptions> = {},
): Promise<{ server: OpenAIServer; url: string; target: Awaited<ReturnType<typeof localServeTarget>> }> {
  const target = await localServeTarget(TINY_MODEL_DIR, (d) => d, { name: 'tiny' });
  const server = new OpenAIServer({ ...target, ...options });
  const { url } = await server.listen(0);
  return { server, url, target };
}

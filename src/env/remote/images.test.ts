// Images on the env wire: what `ragen env serve` sends for a visual env (base64 PNG with its size, the space in
// /metadata and the reset reply), what RemoteEnv makes of it, and the sentences for a server that sends bad images.
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import '../../envs/index.js';
import { decodePng, encodePng, PngError } from '../../util/index.js';
import { checkRegisteredEnv, makeEnv } from '../index.js';
import { EnvServer, registerRemoteEnv, RemoteEnv, RemoteEnvError } from './index.js';
import { RawClient } from './testing.js';
import { imageFromWire } from './wire-image.js';

const quiet = { log: () => {} };
const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0)) await f();
});

async function serve(ids: string[]): Promise<number> {
  const server = new EnvServer({ envIds: ids, port: 0, ...quiet });
  cleanup.push(() => server.close());
  return server.listen();
}

describe('images over the env wire', () => {
  it('a reset reply carries the image as a base64 PNG of the local pixels, and the observation space', async () => {
    const port = await serve(['VisualFrozenLake']);
    const client = await RawClient.open(`ws://127.0.0.1:${port}/VisualFrozenLake`);
    cleanup.push(() => client.ws.close());
    const reply = await client.ask({ type: 'reset', data: { seed: 4 } });
    if (reply.type !== 'observation') throw new Error(JSON.stringify(reply));
    const local = await makeEnv('VisualFrozenLake').reset({ seed: 4 });
    const [wire] = reply.data.observation.images!;
    expect(wire).toMatchObject({ width: local.images![0]!.width, height: local.images![0]!.height, format: 'png' });
    expect(decodePng(Buffer.from(wire!.data, 'base64'))).toEqual(local.images![0]);
    expect(reply.data.observationSpace).toEqual({ text: true, image: { width: 64, height: 64 } });
  });

  it("a text env's observations carry no images field and its space is null", async () => {
    const port = await serve(['FrozenLake']);
    const client = await RawClient.open(`ws://127.0.0.1:${port}/FrozenLake`);
    cleanup.push(() => client.ws.close());
    const reply = await client.ask({ type: 'reset', data: { seed: 4 } });
    if (reply.type !== 'observation') throw new Error(JSON.stringify(reply));
    expect(Object.keys(reply.data.observation)).toEqual(['text']);
    expect(reply.data.observationSpace).toBeNull();
  });

  it("a registered remote visual env declares the server's space before any reset and passes checkRegisteredEnv", async () => {
    const port = await serve(['VisualSimpleSokoban']);
    const id = await registerRemoteEnv(`remote:ws://127.0.0.1:${port}/VisualSimpleSokoban`, quiet);
    const env = makeEnv(id);
    expect(env.observationSpace).toEqual(makeEnv('VisualSimpleSokoban').observationSpace);
    await env.close();
    await checkRegisteredEnv(id, { seeds: [0] });
  });

  it('a server whose image is not a PNG or not its declared size is a PROTOCOL_ERROR naming the server and why', async () => {
    const png = Buffer.from(encodePng({ width: 2, height: 1, data: new Uint8Array(6) })).toString('base64');
    const bad = [
      { width: 2, height: 1, format: 'png', data: Buffer.from('not a png').toString('base64') },
      { width: 3, height: 1, format: 'png', data: png },
      { width: 2, height: 1, format: 'jpeg', data: png },
    ];
    const wss = new WebSocketServer({ port: 0 });
    cleanup.push(() => wss.close());
    let next = 0;
    wss.on('connection', (ws) =>
      ws.on('message', () => {
        const images = [bad[next++ % bad.length]];
        const data = { observation: { text: 'x', images }, reward: null, done: false, info: {}, render: 'x' };
        ws.send(JSON.stringify({ type: 'observation', data }));
      }),
    );
    await new Promise((r) => wss.once('listening', r));
    const url = `ws://127.0.0.1:${(wss.address() as { port: number }).port}/X`;
    const env = new RemoteEnv(url, quiet);
    cleanup.push(() => env.close());
    const why = [/image 0: Not a PNG/, /declares 3x1 but its PNG is 2x1/, /format "jpeg" is not supported; send "png"/];
    for (const pattern of why) {
      const err = await env.reset({ seed: 0 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RemoteEnvError);
      expect((err as RemoteEnvError).code).toBe('PROTOCOL_ERROR');
      expect((err as Error).message).toMatch(url);
      expect((err as Error).message).toMatch(pattern);
    }
  });

  it('imageFromWire refuses a missing data field with the expected shape', () => {
    expect(() => imageFromWire({ width: 1 }, 'here')).toThrow(PngError);
    expect(() => imageFromWire(null, 'here')).toThrow(/here: an image must be \{width, height, format: "png", data/);
  });
});

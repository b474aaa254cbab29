// Issue 34 item 1: an episode belongs to its program. Its URLs carry a random secret given only to that program, so a
// process (or another episode's agent) that knows the port and the episode ids cannot make calls or report rewards
// into it; such requests get 404 and are counted, and a second reward is counted too.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentContext } from './in-process.js';
import { runAgentEpisodes } from './runner.js';
import type { Gateway } from './server.js';
import { tinyGateway } from './testing.js';

let gateway: Gateway;
let origin: string;

beforeAll(async () => {
  gateway = await tinyGateway({ maxTokens: 4 });
  origin = `http://127.0.0.1:${(gateway.http.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await gateway.close();
});

const chat = (base: string) =>
  fetch(`${base}/chat/completions`, {
    method: 'POST',
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
  });
const reward = (url: string, r: number) => fetch(url, { method: 'POST', body: JSON.stringify({ reward: r }) });

/** Every URL the old naming scheme (`/episodes/<id>/...`) gives for these ids. */
const guessed = (ids: string[]) =>
  ids.flatMap((id) => [`${origin}/episodes/${id}/v1`, `${origin}/episodes/${id}/reward`]);

describe('episode secrets (item 1)', () => {
  it('item 1: episode URLs carry a fresh secret of >= 128 random bits, never the episode id', () => {
    const a = gateway.open('s1-e0-g0-m0');
    const b = gateway.open('s1-e0-g0-m1');
    gateway.finish('s1-e0-g0-m0');
    gateway.finish('s1-e0-g0-m1');
    for (const o of [a, b]) {
      expect(o.baseUrl).toBe(`${origin}/episodes/${o.secret}/v1`);
      expect(o.rewardUrl).toBe(`${origin}/episodes/${o.secret}/reward`);
      expect(o.baseUrl).not.toContain('s1-e0');
      expect(Buffer.from(o.secret, 'base64url').length * 8).toBeGreaterThanOrEqual(128);
    }
    expect(a.secret).not.toBe(b.secret);
  });

  it('item 1: a request by episode id, with a wrong secret, or after the episode ended gets 404 and is counted; the episode records only its own', async () => {
    gateway.takeUnauthorized();
    const ids = ['s1-e0-g0-m0', 'val-e0-g0-m0'];
    const opened = ids.map((id) => gateway.open(id));
    const statuses: number[] = [];
    for (const url of guessed(ids))
      statuses.push((await (url.endsWith('/reward') ? reward(url, 1) : chat(url))).status);
    const wrong = opened[0]!.baseUrl.replace(
      opened[0]!.secret,
      opened[0]!.secret.slice(0, -1) + (opened[0]!.secret.endsWith('A') ? 'B' : 'A'),
    );
    statuses.push(
      (await chat(wrong)).status,
      (await fetch(`${origin}/v1/chat/completions`, { method: 'POST', body: '{}' })).status,
    );
    expect(statuses).toEqual(statuses.map(() => 404));
    const body = (await (await chat(wrong)).json()) as { error: { message: string; code: string } };
    expect(body.error.code).toBe('episode_not_found');
    expect(body.error.message).not.toContain(opened[0]!.secret.slice(0, -1)); // the refusal does not echo a near-miss
    // The honest program's own call and reward go through.
    expect((await chat(opened[0]!.baseUrl)).status).toBe(200);
    expect((await reward(opened[0]!.rewardUrl, 0)).status).toBe(200);
    const logs = ids.map((id) => gateway.finish(id));
    expect(logs.map((l) => [l.calls.length, l.reward])).toEqual([
      [1, 0],
      [0, undefined],
    ]);
    expect((await chat(opened[0]!.baseUrl)).status).toBe(404); // its secret ended with it
    expect(gateway.takeUnauthorized()).toBe(statuses.length + 2);
    expect(gateway.takeUnauthorized()).toBe(0);
  });

  it('item 1: a second reward is refused with 409 and counted in the episode record', async () => {
    const { rewardUrl } = gateway.open('dup');
    expect((await reward(rewardUrl, 0.5)).status).toBe(200);
    expect((await reward(rewardUrl, 1)).status).toBe(409);
    expect((await reward(rewardUrl, 1)).status).toBe(409);
    const log = gateway.finish('dup');
    expect([log.reward, log.duplicateRewards]).toEqual([0.5, 2]);
  });

  it("item 1: in-process agents of one run cannot write into each other's episodes by id or by URL pattern", async () => {
    gateway.takeUnauthorized();
    const attempts: number[] = [];
    // m0 reports 0 honestly, then tries to give m1 (running at the same time) reward 1 and a call, by every route it
    // could derive.
    const agent = async (ctx: AgentContext) => {
      if (ctx.episodeId.endsWith('-m0')) {
        const other = ctx.episodeId.replace(/-m0$/, '-m1');
        const derived = ctx.baseUrl.replace(/\/episodes\/[^/]+\//, `/episodes/${other}/`);
        for (const url of [...guessed([other]), derived, derived.replace(/\/v1$/, '/reward')])
          attempts.push((await (url.endsWith('/reward') ? reward(url, 1) : chat(url))).status);
        await reward(ctx.rewardUrl, 0);
        return;
      }
      await new Promise((r) => setTimeout(r, 300)); // still open while m0 attacks
      expect((await chat(ctx.baseUrl)).status).toBe(200);
      await reward(ctx.rewardUrl, 0);
    };
    const tasks = ['ip-g0-m0', 'ip-g0-m1'].map((episodeId) => ({ episodeId, seed: 0, group: 0 }));
    const outs = await runAgentEpisodes(gateway, { agent, timeoutS: 30 }, tasks, { concurrency: 2 });
    expect(attempts).toEqual([404, 404, 404, 404]);
    expect(outs.map((o) => [o.status, o.reward, o.rewardSource, o.log.calls.length, o.log.duplicateRewards])).toEqual([
      ['ok', 0, 'http', 0, 0],
      ['ok', 0, 'http', 1, 0],
    ]);
    expect(gateway.takeUnauthorized()).toBe(4);
  }, 30_000);
});

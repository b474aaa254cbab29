// The distillation teacher's sources (a model directory, a shipped model, a `ragen serve` endpoint) and the tokenizer
// check that guards them: a server teacher's log-probs must equal a local engine's teacher-forced pass of the same
// model, and a teacher with another tokenizer is refused with the key and the first differing token.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEngine, sequenceBatch } from '../engine/index.js';
import { loadConfig } from '../config/index.js';
import { serveTiny } from '../serve/testing.js';
import { ConfigError } from '../util/index.js';
import { modelTokenizer } from './engine-setup.js';
import { checkSameTokenizer, engineTeacher, openTeacher, probeIds, type FetchLike } from './teacher.js';

const TINY = fileURLToPath(new URL('../../models/ragen-tiny', import.meta.url));
const OTHER = fileURLToPath(new URL('../../models/guess-number-tiny', import.meta.url));
const student = modelTokenizer(TINY);
const config = (teacher: string, more: string[] = []) =>
  loadConfig({ overrides: [`algo.distill.teacher=${JSON.stringify(teacher)}`, ...more] });

let served: Awaited<ReturnType<typeof serveTiny>>;
beforeAll(async () => {
  served = await serveTiny();
});
afterAll(async () => {
  await served.server.close();
});

/** Two rows of the student's own kind: a templated prompt and a few tokens after it, right-padded. */
function rows() {
  const p = probeIds(student);
  return sequenceBatch([p, p.slice(0, 20)], student.padTokenId);
}

describe('checkSameTokenizer', () => {
  it('passes the same ids and names the first differing position and the vocab sizes otherwise', () => {
    const ids = probeIds(student);
    expect(() => checkSameTokenizer(student, ids, 't')).not.toThrow();
    const changed = [...ids];
    changed[5] = changed[5]! + 1;
    expect(() => checkSameTokenizer(student, changed, 't')).toThrow(/`algo.distill.teacher` = "t".*position 5/);
    expect(() => checkSameTokenizer(student, ids.slice(0, -1), 't')).toThrow(/position \d+.*the end/);
    expect(() => checkSameTokenizer(student, ids, 't', student.vocabSize + 1)).toThrow(/tokens, the student's has/);
  });
});

describe('openTeacher', () => {
  it('is null without algo.distill.teacher', async () => {
    expect(await openTeacher(loadConfig({ overrides: [] }), student)).toBeNull();
  });

  it('opens a shipped model by name and scores rows as the local engine does', async () => {
    const teacher = (await openTeacher(config('ragen-tiny', ['algo.distill.batchSize=1']), student))!;
    const engine = await LocalEngine.fromPretrained(TINY);
    try {
      const b = rows();
      const got = await teacher.logprobs(b);
      const want = (await engine.forward(b, { role: 'policy' })).logprobs;
      // batchSize 1: one row per forward pass; the sums then round a little differently from one 2-row pass
      for (let i = 0; i < b.B * b.T; i++) expect(got[i]!, `entry ${i}`).toBeCloseTo(want[i]!, 4);
      expect(got[1]).toBeLessThan(0);
    } finally {
      teacher.dispose();
      engine.dispose();
    }
  });

  it('takes a missing `runs/<name>` for a run not trained yet (not a Hub id) and says how to make it', async () => {
    const err = await openTeacher(config('src/no-such-teacher'), student).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/no directory .*src\/no-such-teacher\. Train the teacher first/);
  });

  it('takes `<logging.runsDir>/<name>` for a run even before the runs directory exists, never a Hub id', async () => {
    const err = await openTeacher(
      config('no-such-runs-dir/teacher', ['logging.runsDir=no-such-runs-dir']),
      student,
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/no directory .*no-such-runs-dir\/teacher\. Train the teacher first/);
  });

  it('refuses a model directory whose tokenizer differs from the student’s', async () => {
    const err = await openTeacher(config(OTHER), student).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/algo.distill.teacher.*guess-number-tiny.*same tokenizer/s);
  });

  it('uses a `ragen serve` endpoint: echo log-probs equal the same model’s teacher-forced pass', async () => {
    const teacher = (await openTeacher(config(served.url, ['algo.distill.batchSize=2']), student))!;
    const local = engineTeacher(served.target.engine, 'local', 8);
    const b = rows();
    const got = await teacher.logprobs(b);
    const want = await local.logprobs(b);
    for (let i = 0; i < b.B * b.T; i++) expect(got[i]!, `entry ${i}`).toBeCloseTo(want[i]!, 4);
    const pads = Array.from(b.attentionMask).filter((m) => m === 0).length;
    expect(pads).toBeGreaterThan(0); // padding is 0 in both
  });

  it('refuses a server that cannot show its prompt ids, and names an unreachable one', async () => {
    const noIds: FetchLike = async (url) => ({
      ok: true,
      status: 200,
      json: async () => (url.endsWith('/models') ? { data: [{ id: 'm' }] } : { choices: [] }),
      text: async () => '',
    });
    await expect(openTeacher(config('http://teacher.test/v1'), student, { fetch: noIds })).rejects.toThrow(
      /prompt_token_ids/,
    );
    await expect(openTeacher(config('http://127.0.0.1:9/v1'), student)).rejects.toThrow(/cannot be reached/);
  });
});

import '../index.js';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { shippedFiles } from '../../../scripts/gen-metamathqa.js';
import { ConfigError, ResetNeededError } from '../../util/index.js';
import type { StepResult } from '../../env/index.js';
import { envSpec, makeEnv } from '../../env/index.js';
import { answersMatch, extractAnswer, loadRecords, MetaMathQAEnv, parseNumber, shippedDataDir } from './index.js';

const tmp = mkdtempSync(join(tmpdir(), 'mmqa-'));
function jsonl(name: string, records: object[] | string): string {
  const path = join(tmp, name);
  writeFileSync(path, typeof records === 'string' ? records : records.map((r) => JSON.stringify(r)).join('\n'));
  return path;
}
const two = jsonl('two.jsonl', [
  { query: 'What is 2+2?', response: '2+2=4. The answer is: 4' },
  { query: 'Half of 1,500?', response: 'The answer is: 750' },
]);

describe('the shipped MetaMathQA sample', () => {
  test('is exactly what scripts/gen-metamathqa.ts generates (seeded, committed, up to date)', () => {
    const files = shippedFiles();
    expect(readFileSync(join(shippedDataDir(), 'train.jsonl'), 'utf8')).toBe(files.train);
    expect(readFileSync(join(shippedDataDir(), 'val.jsonl'), 'utf8')).toBe(files.val);
  });
  test('has at least 500 problems, numeric answers, distinct questions, train and val disjoint, < 300 kB', () => {
    const train = loadRecords(join(shippedDataDir(), 'train.jsonl'));
    const val = loadRecords(join(shippedDataDir(), 'val.jsonl'));
    expect(train.length + val.length).toBeGreaterThanOrEqual(500);
    expect(val.length).toBeGreaterThanOrEqual(50);
    for (const r of [...train, ...val]) expect(parseNumber(r.answer), r.answer).not.toBeUndefined();
    const queries = new Set([...train, ...val].map((r) => r.query));
    expect(queries.size).toBe(train.length + val.length);
    const { train: t, val: v } = shippedFiles();
    expect(t.length + v.length).toBeLessThan(300_000);
  });
  test('each worked response states its final value before "The answer is"', () => {
    const { train } = shippedFiles();
    for (const line of train.trim().split('\n')) {
      const { response } = JSON.parse(line) as { response: string };
      const answer = extractAnswer(response)!;
      const body = response.slice(0, response.lastIndexOf('The answer is'));
      const numbers = [...body.matchAll(/-?\$?[\d,]+(?:\.\d+)?(?:\/\d+)?/g)].map((m) => m[0].replace(/\$/g, ''));
      expect(
        numbers.some((n) => answersMatch(n, answer)),
        response,
      ).toBe(true);
    }
  });
});

describe('MetamathQA env', () => {
  test('seed picks question seed mod n; the right answer in another form earns 1 and succeeds', () => {
    const env = makeEnv('MetamathQA', { dataPath: two });
    expect((env.reset({ seed: 3 }) as { observation: string }).observation).toBe('Half of 1,500?');
    const r = env.step('750.0') as StepResult;
    expect([r.reward, r.terminated, r.info.success, r.info.correctAnswer]).toEqual([1, true, true, '750']);
    expect(() => env.step('750')).toThrow(ResetNeededError);
  });
  test('a wrong answer ends a single-attempt episode with 0 and no success', () => {
    const env = makeEnv('MetamathQA', { dataPath: two });
    env.reset({ seed: 0 });
    const r = env.step('5') as StepResult;
    expect([r.reward, r.terminated, r.info.success, r.info.actionIsValid, r.observation]).toEqual([
      0,
      true,
      false,
      true,
      'Incorrect.',
    ]);
  });
  test('with maxAttempts 3 a wrong answer asks again and the second right answer earns 1/2', () => {
    const env = makeEnv('MetamathQA', { dataPath: two, maxAttempts: 3 });
    env.reset({ seed: 0 });
    const wrong = env.step('5') as StepResult;
    expect([wrong.terminated, wrong.observation]).toEqual([false, 'Incorrect. Please think again.']);
    const right = env.step('The answer is: 4') as StepResult;
    expect([right.reward, right.terminated, right.info.attempts]).toEqual([0.5, true, 2]);
  });
  test('an empty answer is invalid, costs no attempt and changes nothing', () => {
    const env = new MetaMathQAEnv({ dataPath: two, maxAttempts: 1 });
    env.reset({ seed: 0 });
    const r = env.step('  ');
    expect([r.info.actionIsValid, r.terminated, env.render()]).toEqual([false, false, 'What is 2+2?']);
    expect(env.step('4').reward).toBe(1);
  });
  test('train and val modes read different files of a data folder', () => {
    const env = makeEnv('MetamathQA');
    const train = (env.reset({ seed: 0, mode: 'train' }) as { observation: string }).observation;
    const val = (env.reset({ seed: 0, mode: 'val' }) as { observation: string }).observation;
    expect(train).not.toBe(val);
  });
  test('the solver answers every shipped val question right', () => {
    const solve = envSpec('MetamathQA').solve!;
    const env = makeEnv('MetamathQA');
    for (let seed = 0; seed < 80; seed++) {
      env.reset({ seed, mode: 'val' });
      expect((env.step(solve({ dataPath: '', maxAttempts: 1 }, seed, 'val')![0]!) as StepResult).info.success).toBe(
        true,
      );
    }
  });
  test('a missing path or a malformed file is a ConfigError naming it', () => {
    expect(() => makeEnv('MetamathQA', { dataPath: '/nonexistent/x.jsonl' })).toThrow(ConfigError);
    expect(() => makeEnv('MetamathQA', { dataPath: '/nonexistent/x.jsonl' })).toThrow(/\/nonexistent\/x.jsonl/);
    const bad = jsonl('bad.jsonl', '{"query": "q", "response": "no marker"}\n');
    expect(() => makeEnv('MetamathQA', { dataPath: bad }).reset({ seed: 0 })).toThrow(
      /bad.jsonl:1: the response does not end/,
    );
    const broken = jsonl('broken.jsonl', '{"query": "q", "response": "The answer is: 1"}\n{oops\n');
    expect(() => makeEnv('MetamathQA', { dataPath: broken }).reset({ seed: 0 })).toThrow(
      /broken.jsonl:2: not valid JSON/,
    );
  });
});

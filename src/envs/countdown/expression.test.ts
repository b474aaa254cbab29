import { describe, expect, test } from 'vitest';
import { MAX_EXPRESSION_DEPTH, evaluate, parseExpression, scoreAnswer } from './expression.js';

const value = (text: string): string | undefined => {
  const p = parseExpression(text);
  if (!p.ok) throw new Error(p.reason);
  const v = evaluate(p.expr);
  return v === undefined ? undefined : v.den === 1n ? String(v.num) : `${v.num}/${v.den}`;
};

describe('parseExpression and evaluate', () => {
  test('follow precedence, left associativity and parentheses', () => {
    expect(value('2 + 3 * 4')).toBe('14');
    expect(value('(2 + 3) * 4')).toBe('20');
    expect(value('10 - 4 - 3')).toBe('3');
    expect(value('64 / 4 / 2')).toBe('8');
    expect(value('7 / 2')).toBe('7/2');
  });
  test('handle unary minus and plus', () => {
    expect(value('-3 + 5')).toBe('2');
    expect(value('4 * -(2 - 5)')).toBe('12');
    expect(value('--3')).toBe('3');
    expect(value('+3')).toBe('3');
  });
  test('are exact with fractions', () => {
    expect(value('(8 / 3) * 3')).toBe('8');
    expect(value('1 / 3 + 1 / 6')).toBe('1/2');
  });
  test('accept unicode operators and any whitespace', () => {
    expect(value('6 × 4 ÷ 2 − 1')).toBe('11');
    expect(value('\t1\n+\u00a02 ')).toBe('3');
  });
  test('report division by zero as undefined, not Infinity', () => {
    expect(value('1 / 0')).toBeUndefined();
    expect(value('5 / (3 - 3)')).toBeUndefined();
  });
  test('keep huge numbers exact', () => {
    expect(value('999999999999999999999 * 99999999999999999999')).toBe(
      (999999999999999999999n * 99999999999999999999n).toString(),
    );
  });
  test('reject syntax errors with a reason', () => {
    for (const bad of [
      '',
      '   ',
      '1 +',
      '(1 + 2',
      '1 2',
      '2(3)',
      ')',
      '1 + * 2',
      '* 3',
      '3 = 3',
      'x',
      '1.5 + 2',
      '３ + 5',
    ]) {
      const p = parseExpression(bad);
      expect(p.ok, bad).toBe(false);
      if (!p.ok) expect(p.reason.length).toBeGreaterThan(5);
    }
  });
  test('cap nesting depth instead of overflowing the stack', () => {
    const ok = '('.repeat(MAX_EXPRESSION_DEPTH) + '1' + ')'.repeat(MAX_EXPRESSION_DEPTH);
    expect(parseExpression(ok).ok).toBe(true);
    const deep = '('.repeat(MAX_EXPRESSION_DEPTH + 1) + '1' + ')'.repeat(MAX_EXPRESSION_DEPTH + 1);
    expect(parseExpression(deep)).toMatchObject({ ok: false, reason: expect.stringContaining('nests deeper') });
    expect(parseExpression('-'.repeat(500) + '1').ok).toBe(false);
    expect(parseExpression('('.repeat(10_000) + '1' + ')'.repeat(10_000)).ok).toBe(false);
  });
});

describe('scoreAnswer', () => {
  const nums = [3, 5, 2];
  test('gives 1.0 to a correct answer using each number once', () => {
    expect(scoreAnswer('2 + 5 - 3', nums, 4)).toMatchObject({ valid: true, correct: true, score: 1 });
    expect(scoreAnswer('(5 - 3) * 2', nums, 4)).toMatchObject({ correct: true, score: 1 });
  });
  test('gives 0.1 to the right numbers with the wrong value', () => {
    expect(scoreAnswer('2 + 5 + 3', nums, 4)).toMatchObject({ valid: true, correct: false, score: 0.1, value: '10' });
    expect(scoreAnswer('5 / 2 - 3', nums, 4)).toMatchObject({ score: 0.1, value: '-1/2' });
  });
  test('gives 0 to a repeated, missing or foreign number', () => {
    expect(scoreAnswer('2 + 2 + 0', nums, 4).score).toBe(0);
    expect(scoreAnswer('5 - 3 + 2 - 2 + 2', nums, 4).score).toBe(0);
    expect(scoreAnswer('5 - 3 + 2', [5, 3, 2, 2], 6).score).toBe(0);
    expect(scoreAnswer('5 + 5', [5, 3], 10)).toMatchObject({
      score: 0,
      reason: expect.stringContaining('exactly once'),
    });
  });
  test('counts duplicates in the given numbers', () => {
    expect(scoreAnswer('2 * 2 + 5', [2, 5, 2], 9)).toMatchObject({ correct: true });
    expect(scoreAnswer('007 + 2', [7, 2], 9)).toMatchObject({ correct: true });
  });
  test('gives 0 to division by zero without throwing', () => {
    expect(scoreAnswer('5 / (3 - 3)', [5, 3, 3], 1)).toMatchObject({
      valid: true,
      score: 0,
      reason: 'the expression divides by zero',
    });
  });
  test('gives 0 to huge numbers that are not the given ones', () => {
    const r = scoreAnswer('999999999999999999999*99999999999999999999999', nums, 4);
    expect(r).toMatchObject({ valid: true, score: 0 });
  });
  test('never throws on hostile text', () => {
    const hostile = [
      '',
      'a'.repeat(100_000),
      '1+'.repeat(50_000) + '1',
      '\u0000\u0007\u001b[31m',
      '🙂 + 3',
      '\ud800',
      '((((',
      '5 / 0 / 0',
      '9'.repeat(100_000),
    ];
    for (const h of hostile) {
      const r = scoreAnswer(h, nums, 4);
      expect(r.score).toBe(0);
    }
  });
});

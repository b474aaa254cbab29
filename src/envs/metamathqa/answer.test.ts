import { describe, expect, test } from 'vitest';
import { answersMatch, extractAnswer, normalizeAnswer, parseNumber } from './answer.js';

describe('answer matching', () => {
  test('extracts the text after the last "The answer is:"', () => {
    expect(extractAnswer('So x = 4. The answer is: 12')).toBe('12');
    expect(extractAnswer('the answer is 3. Wait. The answer is: 5')).toBe('5');
    expect(extractAnswer('no marker')).toBeUndefined();
  });
  test.each([
    ['1,000', '1000'],
    ['1000.0', '1000'],
    ['3/4', '0.75'],
    ['\\frac{3}{4}', '0.75'],
    ['$12.50', '12.5'],
    ['25%', '25'],
    ['12 apples', '12'],
    [' The answer is: 42. ', '42'],
    ['\\boxed{7}', '7'],
    ['-3/6', '-0.5'],
    ['1,234,567', '1234567'],
    ['X + 1', 'x+1'],
  ])('%s matches %s', (given, reference) => {
    expect(answersMatch(given, reference)).toBe(true);
  });
  test.each([
    ['12', '13'],
    ['0.333', '1/3'],
    ['1,00', '100'], // not a thousands grouping
    ['', ''],
    ['1/0', 'Infinity'],
    ['9'.repeat(400), '9'.repeat(401)],
  ])('%s does not match %s', (given, reference) => {
    expect(answersMatch(given, reference)).toBe(false);
  });
  test('parseNumber rejects what is not a number', () => {
    for (const s of ['abc', '1.2.3', 'nan', '', '1e400', '--3'])
      expect(parseNumber(normalizeAnswer(s))).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { Rng } from '../util/index.js';
import { parseResponse } from './parse.js';

const think = { enableThink: true, actionSep: '||', maxActions: 2 };
const noThink = { enableThink: false, actionSep: '||', maxActions: 2 };

/** The reference semantics: RAGEN's regex, first match, dot matching newlines. */
function regexParse(text: string): { think: string; answer: string } | undefined {
  const m = /<think>([\s\S]*?)<\/think>\s*<answer>([\s\S]*?)<\/answer>/.exec(text);
  return m ? { think: m[1]!, answer: m[2]! } : undefined;
}

describe('parseResponse', () => {
  it('reads think and answer and splits actions on ||', () => {
    const p = parseResponse('<think> box is left </think>\n<answer> Left || Up </answer>', think);
    expect(p).toEqual({
      ok: true,
      think: 'box is left',
      answer: 'Left || Up',
      actions: ['Left', 'Up'],
      droppedActions: 0,
    });
  });

  it('keeps at most maxActions and counts the rest as dropped', () => {
    const p = parseResponse('<think></think><answer>a||b|| c ||d</answer>', think);
    expect(p.actions).toEqual(['a', 'b']);
    expect(p.droppedActions).toBe(2);
  });

  it('drops empty actions and fails on an empty answer', () => {
    expect(parseResponse('<think>x</think><answer> || Up ||  </answer>', think).actions).toEqual(['Up']);
    expect(parseResponse('<think>x</think><answer>  </answer>', think)).toMatchObject({
      ok: false,
      reason: 'empty answer',
    });
  });

  it('names what is missing', () => {
    expect(parseResponse('Left', think).reason).toBe('no <think> tag');
    expect(parseResponse('<think>x', think).reason).toBe('no </think> after <think>');
    expect(parseResponse('<think>x</think> so <answer>Up</answer>', think).reason).toBe(
      'no <answer> right after </think>',
    );
    expect(parseResponse('<think>x</think><answer>Up', think).reason).toBe('no </answer> after <answer>');
    expect(parseResponse('Up', noThink).reason).toBe('no <answer> tag');
  });

  it('takes the first match, as the lazy regex does, across nested and repeated tags', () => {
    const text = '<think>a</think> nope <think>b</think><answer>X</answer><think>c</think><answer>Y</answer>';
    // the think group of the first <think> stretches to the first </think> that is followed by <answer>
    expect(parseResponse(text, think)).toMatchObject({ ok: true, think: 'a nope b', answer: 'X' });
    expect(parseResponse('<think><think>deep</think></think><answer>Up</answer>', think)).toMatchObject({
      ok: true,
      think: 'deep',
      actions: ['Up'],
    });
    expect(parseResponse('<answer><answer>Up</answer></answer>', noThink).actions).toEqual(['Up']);
  });

  it('strips chat markers from the contents', () => {
    expect(parseResponse('<think>t<|im_end|></think><answer>Up<|im_start|></answer>', think)).toMatchObject({
      think: 't',
      actions: ['Up'],
    });
  });

  it('without think, reads the first answer block', () => {
    expect(parseResponse('<answer>Right</answer> trailing <answer>Up</answer>', noThink)).toMatchObject({
      ok: true,
      actions: ['Right'],
      think: '',
    });
  });

  it('agrees with the reference regex on random tag soup', () => {
    const rng = new Rng(1);
    const pieces = ['<think>', '</think>', '<answer>', '</answer>', ' ', '\n', 'Up', '||', 'x', '<', '>', '/'];
    for (let i = 0; i < 3000; i++) {
      let s = '';
      for (let j = rng.int(14); j > 0; j--) s += rng.choice(pieces);
      const ref = regexParse(s);
      const p = parseResponse(s, { ...think, maxActions: 99 });
      if (!ref) {
        expect(p.ok, s).toBe(false);
      } else {
        const clean = (t: string) =>
          t
            .split('<think>')
            .join('')
            .split('</think>')
            .join('')
            .split('<answer>')
            .join('')
            .split('</answer>')
            .join('')
            .trim();
        expect(p.think, s).toBe(clean(ref.think));
        expect(p.answer, s).toBe(clean(ref.answer));
      }
    }
  });

  it('never throws on random bytes, unicode or huge outputs, and stays fast', () => {
    const rng = new Rng(2);
    const dec = new TextDecoder('utf-8', { fatal: false });
    for (let i = 0; i < 500; i++) {
      const bytes = Uint8Array.from({ length: rng.int(300) }, () => rng.int(256));
      const s =
        dec.decode(bytes) +
        (rng.random() < 0.5 ? '<think>' : '') +
        String.fromCodePoint(rng.int(0x10ffff)).replace(/[\ud800-\udfff]/g, '');
      expect(() => parseResponse(s, think)).not.toThrow();
      expect(() => parseResponse(s, noThink)).not.toThrow();
    }
    const t0 = performance.now();
    const adversarial = [
      '<think>'.repeat(15000),
      '<think>' + '</think>'.repeat(13000),
      '<think>x</think><answer>' + 'Up || '.repeat(20000),
      'x'.repeat(100_000),
    ];
    for (const s of adversarial) {
      expect(s.length).toBeGreaterThanOrEqual(100_000);
      expect(parseResponse(s, think).ok).toBe(false);
    }
    const big = parseResponse(
      '<think>' + 'a'.repeat(100_000) + '</think><answer>' + 'Up || '.repeat(20000) + '</answer>',
      think,
    );
    expect(big.actions).toEqual(['Up', 'Up']);
    expect(big.droppedActions).toBe(19998);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(parseResponse(undefined as unknown as string, think).ok).toBe(false);
  });
});

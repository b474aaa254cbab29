// Parsing a model's response (RAGEN's `_parse_response`): the first <think>...</think> <answer>...</answer>
// match, actions split on the separator. Never throws and runs in linear time, whatever the model wrote.

/** Markers removed from the think and answer text (RAGEN strips the same ones). */
export const STRIPPED_MARKERS = [
  '<think>',
  '</think>',
  '<answer>',
  '</answer>',
  '<|im_start|>',
  '<|im_end|>',
  '<|endoftext|>',
];

/** What a response says, or why it says nothing usable. */
export interface ParsedResponse {
  /** A well-formed block was found and it held at least one action. */
  ok: boolean;
  /** Why not, when `ok` is false. */
  reason?: string;
  /** The reasoning (markers stripped, trimmed); '' without think or on failure. */
  think: string;
  /** The answer text (markers stripped, trimmed); '' on failure. */
  answer: string;
  /** The actions to execute: split on the separator, trimmed, empties dropped, at most `maxActions`. */
  actions: string[];
  /** Parsed actions beyond `maxActions`, dropped (they are not executed). */
  droppedActions: number;
}

/** Options of `parseResponse`. */
export interface ParseOptions {
  enableThink: boolean;
  actionSep: string;
  maxActions: number;
}

function fail(reason: string): ParsedResponse {
  return { ok: false, reason, think: '', answer: '', actions: [], droppedActions: 0 };
}

function strip(text: string): string {
  let s = text;
  for (const m of STRIPPED_MARKERS) if (s.includes(m)) s = s.split(m).join('');
  return s.trim();
}

function isSpace(c: number): boolean {
  // the characters of a regex `\s` that a model plausibly writes between the blocks
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x2028 || c === 0x2029 || c === 0x3000 || c === 0xfeff;
}

/**
 * Parse `text` (the whole assistant turn, prefilled tag included) the way the regex
 * `<think>(.*?)</think>\s*<answer>(.*?)</answer>` (dot matches newlines; first match) does, or
 * `<answer>(.*?)</answer>` without think; then split the answer on `actionSep`.
 */
export function parseResponse(text: string, options: ParseOptions): ParsedResponse {
  if (typeof text !== 'string') return fail('response is not text');
  let answerStart: number;
  let think = '';
  if (options.enableThink) {
    const open = text.indexOf('<think>');
    if (open < 0) return fail('no <think> tag');
    // The lazy think group ends at the first </think> followed by optional whitespace and <answer>.
    let close = text.indexOf('</think>', open + 7);
    if (close < 0) return fail('no </think> after <think>');
    answerStart = -1;
    while (close >= 0) {
      let p = close + 8;
      while (p < text.length && isSpace(text.charCodeAt(p))) p++;
      if (text.startsWith('<answer>', p)) {
        answerStart = p;
        break;
      }
      close = text.indexOf('</think>', close + 8);
    }
    if (answerStart < 0) return fail('no <answer> right after </think>');
    think = strip(text.slice(open + 7, close));
  } else {
    answerStart = text.indexOf('<answer>');
    if (answerStart < 0) return fail('no <answer> tag');
  }
  const end = text.indexOf('</answer>', answerStart + 8);
  if (end < 0) return fail('no </answer> after <answer>');
  const answer = strip(text.slice(answerStart + 8, end));
  const all = answer
    .split(options.actionSep)
    .map((a) => a.trim())
    .filter((a) => a.length > 0);
  const actions = all.slice(0, Math.max(0, options.maxActions));
  if (actions.length === 0)
    return { ok: false, reason: 'empty answer', think, answer, actions: [], droppedActions: all.length };
  return { ok: true, think, answer, actions, droppedActions: all.length - actions.length };
}

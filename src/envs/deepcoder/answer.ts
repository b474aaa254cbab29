// From the model's answer to the program the sandbox runs, as RAGEN's run_deepcoder_sandbox builds it:
// a `class Solution` replaces the starter, a bare method is indented into it. Plus one kindness: a markdown fence is
// unwrapped.
import type { Problem } from './problem.js';

export type AssembledProgram = { ok: true; code: string } | { ok: false; reason: string };

const FENCE = /```[ \t]*(?:python3?|py)?[ \t]*\r?\n([\s\S]*?)```/i;

/**
 * The program to run for `answer`. Empty answers are invalid (RAGEN: `action_is_valid=False`, reward
 * 0). The first fenced code block, if any, is taken as the code (RAGEN would run the fence and fail
 * with a SyntaxError). For call-style problems a bare `def name(self, ...)` is indented into `class
 * Solution:`; a `def` without `self` stays a top-level function (RAGEN indents it anyway, which then
 * fails to be called); an answer with its own `class Solution` is used as it is.
 */
export function assembleProgram(answer: string, problem: Pick<Problem, 'style'>): AssembledProgram {
  let body = answer;
  const fenced = FENCE.exec(body);
  if (fenced) body = fenced[1]!;
  body = body.replace(/^\n+|\s+$/g, '');
  if (body.trim() === '') return { ok: false, reason: 'the answer is empty; answer with Python 3 code' };
  if (problem.style === 'call' && !body.includes('class Solution') && /^def\s+\w+\s*\(\s*self\b/.test(body)) {
    const indented = body
      .split('\n')
      .map((line) => (line.trim() ? `    ${line}` : ''))
      .join('\n');
    return { ok: true, code: `class Solution:\n${indented}\n` };
  }
  return { ok: true, code: `${body}\n` };
}

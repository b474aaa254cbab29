// RAGEN's reading of a Kimina answer: a tactic is accepted when Lean reports no error other than "unsolved
// goals" and no sorry; the proof is complete when there is no error at all and no sorry.
import type { LeanMessage, ReplResponse } from './kimina-client.js';

/** What one checked candidate proof means for the episode. */
export interface LeanVerdict {
  /**
   * `valid`/`invalid` (Lean answered), `error` (REPL-level or server-level error), `timeout`, `server_error`
   * (unreachable or empty answer).
   */
  status: 'valid' | 'invalid' | 'error' | 'timeout' | 'server_error';
  accepted: boolean;
  success: boolean;
  messages: LeanMessage[];
}

const rejected = (status: LeanVerdict['status'], data: string): LeanVerdict => ({
  status,
  accepted: false,
  success: false,
  messages: [{ severity: 'error', data }],
});

/** Judge a Kimina ReplResponse (RAGEN's `_run_lean_query`). */
export function judge(r: ReplResponse): LeanVerdict {
  if (typeof r.error === 'string' && r.error !== '')
    return rejected(/timed out/i.test(r.error) ? 'timeout' : 'error', r.error);
  const payload = r.response;
  if (payload === null || payload === undefined || typeof payload !== 'object')
    return rejected('server_error', 'Lean server returned no response payload.');
  if ('message' in payload) return rejected('error', String(payload.message ?? 'Lean REPL error.'));
  const messages = Array.isArray(payload.messages)
    ? payload.messages.filter((m): m is LeanMessage => typeof m === 'object' && m !== null)
    : [];
  const isError = (m: LeanMessage): boolean => String(m.severity ?? '').toLowerCase() === 'error';
  const text = (m: LeanMessage): string => String(m.data ?? (m as { message?: unknown }).message ?? '');
  const blocking = messages.some((m) => isError(m) && !text(m).toLowerCase().includes('unsolved goals'));
  const hasSorry = Array.isArray(payload.sorries) && payload.sorries.length > 0;
  const accepted = !blocking && !hasSorry;
  const success = !messages.some(isError) && !hasSorry;
  return { status: accepted ? 'valid' : 'invalid', accepted, success, messages };
}

/** A failed request (the client's exception), as RAGEN reads it: a timeout when the text says "timed out". */
export function judgeFailure(message: string): LeanVerdict {
  return rejected(/timed out/i.test(message) ? 'timeout' : 'server_error', message);
}

/** RAGEN's message lines: `01. [ERROR 3:2 → 3:9] text`, an error about unsolved goals relabelled `UNSOLVED GOALS`. */
export function formatMessages(messages: readonly LeanMessage[], indent = '  ', limit = 0): string[] {
  if (messages.length === 0) return [`${indent}(no Lean messages)`];
  return messages.map((m, i) => {
    let severity = String(m.severity ?? 'info').toUpperCase();
    let data = String(m.data ?? (m as { message?: unknown }).message ?? '').trim();
    if (limit > 0 && data.length > limit) data = `${data.slice(0, limit - 3)}...`;
    if (severity === 'ERROR' && data.toLowerCase().includes('unsolved goals')) severity = 'UNSOLVED GOALS';
    const where = [m.pos, m.endPos]
      .filter((p): p is { line: number; column: number } => !!p && typeof p === 'object')
      .map((p) => (p.column !== undefined ? `${p.line}:${p.column}` : `${p.line}`));
    const loc = where.length ? ` ${where.join(' → ')}` : '';
    return `${indent}${String(i + 1).padStart(2, '0')}. [${severity}${loc}] ${data}`.trimEnd();
  });
}

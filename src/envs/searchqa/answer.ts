// SearchQA's answer scoring: SQuAD normalisation, exact match and token F1, RAGEN's reward on them,
// and the fallback that pulls an answer out of free text. Follows RAGEN's ragen/env/search (from rllm).

/** SQuAD's normalisation: lowercase, drop punctuation and the articles a/an/the, collapse whitespace. */
export function normalizeAnswer(s: string): string {
  return s
    .toLowerCase()
    .replace(/[\p{P}\p{S}]/gu, '')
    .replace(/\b(a|an|the)\b/g, ' ')
    .split(/\s+/)
    .filter(Boolean)
    .join(' ');
}

export function exactMatch(prediction: string, truth: string): boolean {
  return normalizeAnswer(prediction) === normalizeAnswer(truth);
}

const SPECIAL = new Set(['yes', 'no', 'noanswer']);

/** Token F1 of the normalised texts; 0 when either is yes/no/noanswer and they differ (SQuAD/HotpotQA). */
export function f1Score(prediction: string, truth: string): number {
  const p = normalizeAnswer(prediction);
  const t = normalizeAnswer(truth);
  if ((SPECIAL.has(p) || SPECIAL.has(t)) && p !== t) return 0;
  const pt = p.split(' ').filter(Boolean);
  const tt = t.split(' ').filter(Boolean);
  if (pt.length === 0 || tt.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const w of tt) counts.set(w, (counts.get(w) ?? 0) + 1);
  let common = 0;
  for (const w of pt) {
    const n = counts.get(w) ?? 0;
    if (n > 0) {
      common++;
      counts.set(w, n - 1);
    }
  }
  if (common === 0) return 0;
  const precision = common / pt.length;
  const recall = common / tt.length;
  return (2 * precision * recall) / (precision + recall);
}

/** The score of an answer, as RAGEN's: 1 for an exact match, else F1 when F1 >= 0.3, else 0. */
export interface AnswerScore {
  reward: number;
  exactMatch: boolean;
  f1: number;
  /** RAGEN's `success`: an exact match or a positive reward. */
  success: boolean;
}

export function scoreAnswer(prediction: string, truth: string): AnswerScore {
  const em = exactMatch(prediction, truth);
  const f1 = em ? 1 : f1Score(prediction, truth);
  const reward = em ? 1 : f1 >= 0.3 ? f1 : 0;
  return { reward, exactMatch: em, f1, success: em || reward > 0 };
}

/**
 * An answer pulled from free text, in RAGEN's order: the last `\boxed{...}`, else bold text, else what
 * follows "answer is", else what follows "therefore", else the first sentence. Bounded: looks at the
 * first 2,000 characters only.
 */
export function extractAnswer(text: string): string {
  const s = text.slice(0, 2000);
  const boxed = [...s.matchAll(/\\boxed\{([^{}]*)\}/g)].at(-1);
  if (boxed) return boxed[1]!.trim();
  const bold = s.match(/\*\*([^*]+)\*\*/);
  if (bold) return bold[1]!.trim();
  const answerIs = s.match(/answer is:?\s*([^.\n]+)/i);
  if (answerIs) return answerIs[1]!.trim();
  const therefore = s.match(/therefore,?\s*([^.\n]+)/i);
  if (therefore) return therefore[1]!.trim();
  return (s.split(/[.\n]/)[0] ?? '').trim();
}

// Byte-level BPE training (Sennrich et al. 2016; GPT-2's byte-to-unicode alphabet), written for our
// tiny tokenizer: count pre-tokens, then repeatedly merge the most frequent adjacent pair.

/**
 * GPT-2's reversible byte -> printable character map: printable Latin-1 bytes map to themselves,
 * the rest to U+0100 onwards. Byte-level BPE vocabularies (Qwen, GPT-2, ours) are written in it.
 */
export function bytesToUnicode(): string[] {
  const keep: number[] = [];
  for (let b = 33; b <= 126; b++) keep.push(b);
  for (let b = 161; b <= 172; b++) keep.push(b);
  for (let b = 174; b <= 255; b++) keep.push(b);
  const table = new Array<string>(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) table[b] = String.fromCodePoint(keep.includes(b) ? b : 256 + extra++);
  return table;
}

const BYTE_CHARS = bytesToUnicode();
const encoder = new TextEncoder();

/** A pre-token's UTF-8 bytes written in the byte-to-unicode alphabet (one symbol per byte). */
export function byteSymbols(text: string): string[] {
  return Array.from(encoder.encode(text), (b) => BYTE_CHARS[b]!);
}

/** The result of training: merge rules in rank order and the resulting vocabulary (symbol -> id). */
export interface BpeModel {
  vocab: Map<string, number>;
  merges: [string, string][];
}

/**
 * Train byte-level BPE. `counts` maps each pre-token (already split by the pre-tokenizer) to its
 * frequency. The vocabulary starts with the 256 byte symbols (ids 0-255, so every text encodes) and
 * grows by one merged symbol per merge until it has `vocabSize` entries or no pair occurs twice.
 * Ties are broken by the lexicographically smallest pair, so training is deterministic.
 */
export function trainBpe(counts: ReadonlyMap<string, number>, vocabSize: number): BpeModel {
  const vocab = new Map<string, number>();
  for (const ch of BYTE_CHARS) vocab.set(ch, vocab.size);
  const merges: [string, string][] = [];
  const words: { symbols: string[]; count: number }[] = [];
  for (const [text, count] of [...counts].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
    if (count > 0 && text.length > 0) words.push({ symbols: byteSymbols(text), count });
  }
  const SEP = '\u0000';
  while (vocab.size < vocabSize) {
    // Recount every pair: simple and fast enough for vocabularies of a few thousand.
    const pairs = new Map<string, number>();
    for (const w of words) {
      const s = w.symbols;
      for (let i = 0; i + 1 < s.length; i++) {
        const key = s[i] + SEP + s[i + 1];
        pairs.set(key, (pairs.get(key) ?? 0) + w.count);
      }
    }
    let best: string | undefined;
    let bestCount = 1;
    for (const [key, c] of pairs) {
      if (c > bestCount || (c === bestCount && best !== undefined && key < best)) {
        best = key;
        bestCount = c;
      }
    }
    if (best === undefined) break;
    const [a, b] = best.split(SEP) as [string, string];
    const merged = a + b;
    merges.push([a, b]);
    if (!vocab.has(merged)) vocab.set(merged, vocab.size);
    for (const w of words) {
      const s = w.symbols;
      if (s.length < 2) continue;
      const out: string[] = [];
      for (let i = 0; i < s.length; i++) {
        if (i + 1 < s.length && s[i] === a && s[i + 1] === b) {
          out.push(merged);
          i++;
        } else out.push(s[i]!);
      }
      w.symbols = out;
    }
  }
  return { vocab, merges };
}

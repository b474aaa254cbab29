// The tiny tokenizer with Qwen2.5-VL's vision tokens added (models/tokenizer-tiny-vl): what `ragen sft --init tiny-vl`
// trains a vision-language model from scratch with. The BPE, the template and the ids 0-1023 are models/tokenizer-tiny's;
// Qwen2.5-VL's five vision tokens take 1024-1028 as special tokens, in Qwen's order: `<|vision_start|>`,
// `<|vision_end|>`, `<|vision_pad|>`, `<|image_pad|>`, `<|video_pad|>` (the config names each; only the processor
// writes them, the model never samples them).
// Usage: npx tsx scripts/tiny-vl-tokenizer.ts [--from models/tokenizer-tiny] [--out models/tokenizer-tiny-vl]
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { IMAGE_PAD, VISION_END, VISION_START } from '../src/tokenizer/index.js';
import { writeFileAt } from '../src/util/index.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

const from = arg('from', 'models/tokenizer-tiny');
const out = arg('out', 'models/tokenizer-tiny-vl');
const tokenizer = JSON.parse(readFileSync(join(from, 'tokenizer.json'), 'utf8')) as {
  added_tokens: { id: number; content: string }[];
  model: { vocab: Record<string, number> };
};
const config = JSON.parse(readFileSync(join(from, 'tokenizer_config.json'), 'utf8')) as {
  added_tokens_decoder: Record<string, unknown>;
};
let next = Math.max(...Object.values(tokenizer.model.vocab), ...tokenizer.added_tokens.map((t) => t.id)) + 1;
for (const content of [VISION_START, VISION_END, '<|vision_pad|>', IMAGE_PAD, '<|video_pad|>']) {
  if (tokenizer.added_tokens.some((t) => t.content === content)) continue;
  const token = { content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
  tokenizer.added_tokens.push({ id: next, ...token });
  config.added_tokens_decoder[String(next)] = token;
  next++;
}
writeFileAt(join(out, 'tokenizer.json'), JSON.stringify(tokenizer, null, 1) + '\n', 'write the tokenizer', '--out');
writeFileAt(join(out, 'tokenizer_config.json'), JSON.stringify(config, null, 2) + '\n', 'write its config', '--out');
console.log(`${out}: ${next} ids (the vision tokens at ${next - 5}-${next - 1})`);

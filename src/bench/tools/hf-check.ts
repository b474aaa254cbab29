// Save models here, load them in Hugging Face transformers (+ peft for the adapter) and compare logits.
// usage: RAGEN_HF_PYTHON=/path/to/python-with-transformers npx tsx src/bench/tools/hf-check.ts (prints one line per
// case, exits 1 on a mismatch)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LoraAdapters, modelConfig, saveModel, Transformer, type ModelConfig } from '../../model/index.js';
import { noGrad, setBackend } from '../../tensor/index.js';

const python = process.env.RAGEN_HF_PYTHON ?? 'python3';
const base = { vocabSize: 64, hiddenSize: 32, intermediateSize: 48, numLayers: 2, numHeads: 4, numKvHeads: 2 };
const cases: { name: string; config: ModelConfig; lora?: boolean }[] = [
  { name: 'qwen2 tied', config: modelConfig({ ...base, modelType: 'qwen2' }) },
  { name: 'qwen2 tied + LoRA (PEFT)', config: modelConfig({ ...base, modelType: 'qwen2' }), lora: true },
  {
    name: 'qwen3 untied, head_dim 16',
    config: modelConfig({ ...base, modelType: 'qwen3', headDim: 16, tieWordEmbeddings: false }),
  },
  {
    name: 'llama attention bias, untied',
    config: modelConfig({ ...base, modelType: 'llama', qkvBias: true, oBias: true, tieWordEmbeddings: false }),
  },
];
const ids = [
  [3, 17, 5, 30, 2, 9, 11, 40],
  [8, 1, 36, 4, 22, 60, 7, 7],
];
setBackend('js');
let failed = false;
for (const c of cases) {
  const model = Transformer.init(c.config, 1, 0.3);
  noGrad(() => {
    for (const [name, t] of model.weights)
      if (name.endsWith('norm.weight') || name.endsWith('.bias'))
        t.backend.write(
          t.buf,
          t.toFloat32Array().map((_, i) => (name.endsWith('bias') ? 0.1 : 1) + 0.05 * Math.sin(i)),
        );
  });
  if (c.lora) {
    const lora = LoraAdapters.attach(model, { r: 4, alpha: 8 }, 2);
    noGrad(() =>
      lora.parameters().forEach(([, t]) =>
        t.backend.write(
          t.buf,
          t.toFloat32Array().map((_, i) => 0.05 * Math.cos(i)),
        ),
      ),
    );
  }
  const dir = mkdtempSync(join(tmpdir(), 'hf-check-'));
  await saveModel(dir, model);
  writeFileSync(join(dir, 'ids.json'), JSON.stringify(ids));
  const r = spawnSync(
    python,
    [join(import.meta.dirname, 'hf_check.py'), 'logits', dir, join(dir, 'ids.json'), join(dir, 'out.json')],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`hf_check.py failed: ${r.stderr}`);
  const ref = JSON.parse(readFileSync(join(dir, 'out.json'), 'utf8')) as { data: number[] };
  const ours = noGrad(() => model.logits(model.hidden(Int32Array.from(ids.flat()), 2, 8)).toFloat32Array());
  let err = 0,
    scale = 0;
  ours.forEach(
    (x, i) => ((err = Math.max(err, Math.abs(x - ref.data[i]!))), (scale = Math.max(scale, Math.abs(ref.data[i]!)))),
  );
  const ok = err / scale < 1e-4;
  failed ||= !ok;
  console.log(`${ok ? 'PASS' : 'FAIL'} ${c.name}: max relative logit error ${(err / scale).toExponential(2)}`);
}
process.exitCode = failed ? 1 : 0;

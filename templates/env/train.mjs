// Train on __ENV_ID__: `node __DIR__/train.mjs [key=value ...]` (overrides as for `ragen train`, e.g. trainer.steps=2).
// The environment is checked first (determinism per seed, well-formed results, hostile actions), then trained;
// the run lands under runs/ (see it with `npx ragen dashboard runs/`).
import { fileURLToPath } from 'node:url';
import { checkRegisteredEnv, loadConfig, train } from 'ragen-ts';
import './env.mjs';

await checkRegisteredEnv('__ENV_ID__');
const preset = fileURLToPath(new URL('./preset.yaml', import.meta.url));
const config = loadConfig({ config: preset, overrides: process.argv.slice(2) });
const result = await train({ config });
console.log(result.summaryText);
console.log(`${result.lastStep} steps in ${result.runDir}`);

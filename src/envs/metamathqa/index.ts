// Registers RAGEN's `MetamathQA` tag (also reachable as `MetaMathQA`: ids match case-insensitively).
import { registerEnv } from '../../env/index.js';
import { loadRecords, splitFile } from './data.js';
import { MetaMathQAEnv, type MetaMathQAConfig, metaMathQASchema } from './metamathqa.js';

export { MetaMathQAEnv, type MetaMathQAConfig } from './metamathqa.js';
export { answersMatch, normalizeAnswer, parseNumber, extractAnswer } from './answer.js';
export { loadRecords, splitFile, shippedDataDir, type QARecord } from './data.js';

registerEnv<MetaMathQAConfig>('MetamathQA', {
  description:
    'Math word problems from MetaMathQA-format JSONL (shipped: 600 generated arithmetic problems); one answer.',
  schema: metaMathQASchema,
  create: (config) => new MetaMathQAEnv(config),
  maxActionsPerEpisode: 1,
  /** The reference answer. */
  solve: (config, seed, mode = 'train') => {
    const records = loadRecords(splitFile(config.dataPath, mode));
    return [records[((seed % records.length) + records.length) % records.length]!.answer];
  },
});

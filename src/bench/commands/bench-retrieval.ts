// `ragen bench retrieval`: BM25 recall@k of SearchQA's gold passages, by question type, for the question
// text as the query and for the gold entities' names (the oracle's searches).
import type { Command } from 'commander';
import os from 'node:os';
import { HttpRetriever, retrievalRecall } from '../../envs/index.js';
import { parsePositiveInt, UsageError } from '../../util/index.js';

export function register(bench: Command): void {
  bench
    .command('retrieval')
    .description(
      "Recall@k of SearchQA's gold passages under BM25 (or a retrieval server), by question type: the question as the query, and each gold entity's name.",
    )
    .option('--k <n>', 'passages retrieved per query', parsePositiveInt('--k'), 5)
    .option('--mode <mode>', 'question split: val | train', 'val')
    .option('--limit <n>', 'questions to score (default: the whole split; val has 500)', parsePositiveInt('--limit'))
    .option('--corpus-seed <n>', "world seed (SearchQA's corpusSeed)", parsePositiveIntOrZero, 0)
    .option('--url <url>', 'score a RAGEN-compatible retrieval server instead of in-process BM25')
    .option('--json', 'print the report as JSON')
    .addHelpText(
      'after',
      '\nExamples:\n  $ ragen bench retrieval\n  $ ragen bench retrieval --k 10 --mode train --limit 2000 --json',
    )
    .action(
      async (opts: { k: number; mode: string; limit?: number; corpusSeed: number; url?: string; json?: boolean }) => {
        if (opts.mode !== 'val' && opts.mode !== 'train')
          throw new UsageError(`Bad --mode \`${opts.mode}\`: give val or train.`);
        if (opts.k > 50) throw new UsageError(`Bad --k ${opts.k}: RAGEN's API serves at most 50 passages per query.`);
        const report = await retrievalRecall(opts.corpusSeed, {
          k: opts.k,
          mode: opts.mode,
          ...(opts.limit ? { limit: opts.limit } : {}),
          ...(opts.url ? { retriever: new HttpRetriever(opts.url) } : {}),
        });
        if (opts.json)
          return console.log(
            JSON.stringify(
              {
                node: process.version,
                cpu: `${os.cpus()[0]?.model ?? 'unknown'} x ${os.cpus().length}`,
                retriever: opts.url ?? 'bm25 (minisearch)',
                ...report,
              },
              null,
              2,
            ),
          );
        const pct = (x: number): string => `${(100 * x).toFixed(1)}%`.padStart(9);
        console.log(
          `SearchQA world ${opts.corpusSeed}, ${opts.mode} split, ${opts.url ?? 'in-process BM25 (minisearch)'}, recall@${opts.k}, ${report.seconds.toFixed(1)} s`,
        );
        console.log(
          `${'type'.padEnd(12)} ${'questions'.padStart(9)} ${'recall'.padStart(9)} ${'all gold'.padStart(9)} ${'entity'.padStart(9)}`,
        );
        for (const [type, r] of Object.entries(report.rows))
          console.log(
            `${type.padEnd(12)} ${String(r.questions).padStart(9)} ${pct(r.recall)} ${pct(r.allGold)} ${pct(r.entityRecall)}`,
          );
        console.log(
          'recall: gold passages in the top k for the question text; all gold: every gold passage there; entity: each gold passage for its entity name as the query.',
        );
      },
    );
}

function parsePositiveIntOrZero(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 0) throw new UsageError(`Bad --corpus-seed \`${text}\`: give an integer >= 0.`);
  return n;
}

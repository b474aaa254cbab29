// The dashboard in a real browser (Debian's chromium driven by playwright-core): a short training run written while
// the runs page is open appears without reload, then every page renders from that run directory, the trajectory
// viewer shows the episodes' own texts, an eval file's pass@k shows, and the play page finishes an episode with the
// WASM engine inside the page; two runs compared show their config differences, one-row chart keys, a log scale and CSV
// export. Each test saves a screenshot ($RAGEN_SCREENSHOTS, e.g. docs/dashboard, else a temp dir).
import '../envs/index.js'; // the built-in environments
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  agentConfig,
  enginePolicy,
  EnvGroups,
  episodeRecord,
  randomPolicy,
  rollout,
  type EpisodeRecord,
  type Policy,
} from '../agent/index.js';
import { LocalEngine } from '../engine/index.js';
import { makeEnv } from '../env/index.js';
import { loadTokenizer, tinyTokenizerDir } from '../tokenizer/index.js';
import { runEval } from '../eval/index.js';
import { loadConfig, saveConfig } from '../config/index.js';
import { findModelPath } from '../model/index.js';
import { train, writeCheckpoint } from '../train/index.js';
import { startDashboard, type Dashboard } from './index.js';

const CHROMIUM = process.env.RAGEN_CHROMIUM ?? '/usr/bin/chromium';
const BUILT = existsSync(join('build', 'dashboard', 'index.html'));

/** Run when chromium and the built page are there; with RAGEN_REQUIRE_BACKENDS=1 (CI) their absence fails instead. */
function browserAvailable(): boolean {
  const missing = [
    !existsSync(CHROMIUM) && `chromium at ${CHROMIUM} (apt-get install chromium, or set RAGEN_CHROMIUM)`,
    !BUILT && 'build/dashboard/index.html (npm run build)',
  ].filter(Boolean);
  if (missing.length === 0) return true;
  if (process.env.RAGEN_REQUIRE_BACKENDS === '1')
    throw new Error(
      `RAGEN_REQUIRE_BACKENDS=1 requires the dashboard's browser tests, and these are missing: ${missing.join('; ')}. Unset it to skip them.`,
    );
  return false;
}

const shots = process.env.RAGEN_SCREENSHOTS ?? mkdtempSync(join(tmpdir(), 'ragen-shots-'));
const shot = (page: Page, name: string) => page.screenshot({ path: join(shots, `${name}.png`) });

/**
 * A tiny Bandit PPO run with the shipped model: 2 steps of 2 groups of 4, collapse diagnostics and gradient analysis
 * every step.
 */
function tinyRun(runDir: string) {
  return loadConfig({
    config: 'bandit-ppo',
    overrides: [
      `logging.runDir=${runDir}`,
      'logging.console=none',
      'trainer.steps=2',
      'env.train.0.groups=2',
      'env.train.0.groupSize=4',
      'env.val=[{tag: Bandit, groups: 4}]',
      'trainer.valEvery=2',
      'trainer.collapse.every=1',
      'trainer.collapse.numSamples=8',
      'trainer.gradAnalysis.every=1',
      'trainer.gradAnalysis.buckets=2',
      'trainer.gradAnalysis.prefilter=true',
    ],
  });
}

describe.skipIf(!browserAvailable())('dashboard in chromium', () => {
  let browser: Browser;
  let page: Page;
  let dash: Dashboard;
  let runsDir: string;
  let runDir: string;
  const errors: string[] = [];

  beforeAll(async () => {
    if (process.env.RAGEN_SCREENSHOTS) mkdirSync(shots, { recursive: true });
    runsDir = mkdtempSync(join(tmpdir(), 'ragen-dash-runs-'));
    runDir = join(runsDir, 'bandit-run');
    dash = await startDashboard({ roots: [runsDir], pollMs: 100 });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('pageerror', (e) => errors.push(e.message));
  });

  afterAll(async () => {
    await browser?.close();
    await dash?.close();
  });

  it('shows a run being written without a reload, then its validation before and after', async () => {
    await page.goto(dash.url);
    await page.waitForSelector('text=No runs yet');
    const trained = train({ config: tinyRun(runDir) });
    // The row appears while training runs, from the event stream (the page is never reloaded).
    await page.waitForSelector('tr[data-run="0/bandit-run"]', { timeout: 30_000 });
    await trained;
    await page.waitForSelector('tr[data-run="0/bandit-run"] .badge.finished', { timeout: 10_000 });
    const cells = await page.locator('tr[data-run="0/bandit-run"] td').allTextContents();
    const metrics = readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, number>);
    const pct = (v: number) => `${(100 * v).toFixed(1)}%`;
    expect(cells.slice(2, 10)).toEqual([
      'Bandit',
      'gae',
      'none',
      '10000',
      '2 / 2',
      pct(metrics[0]!['val/success']!),
      pct(metrics.at(-1)!['val/success']!),
      'finished',
    ]);
    await shot(page, 'runs');
  });

  it('issue 38 item 4: says what is loading and how far it got while the API is slow, before the data', async () => {
    // Each request waits until the test has read the loading line (a slow server, made deterministic).
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await page.route(/\/api\/(runs|run\?)/, async (route) => {
      await held;
      await route.continue();
    });
    try {
      await page.goto(`${dash.url}#/runs`);
      await page.waitForSelector('#loading .spinner');
      await expect
        .poll(() => page.textContent('#loading-text'), { timeout: 10_000 })
        .toMatch(/Runs page: loading the run list: 0 of 1 request done, \d+\.\d s/);
      const t1 = await page.textContent('#loading-text');
      await expect.poll(() => page.textContent('#loading-text'), { timeout: 10_000 }).not.toBe(t1); // the seconds count
      expect(await page.locator('table.runs').count()).toBe(0); // no data yet
      release();
      await page.waitForSelector('main[data-page="runs"] .runs-page');
      expect(await page.locator('#loading').count()).toBe(0);
    } finally {
      release();
      await page.unroute(/\/api\/(runs|run\?)/);
    }
    // several runs: each named, counted as they arrive
    let releaseRuns!: () => void;
    const heldRuns = new Promise<void>((r) => (releaseRuns = r));
    await page.route(/\/api\/run\?/, async (route) => {
      await heldRuns;
      await route.continue();
    });
    try {
      await page.goto(`${dash.url}#/curves?runs=0/one,0/two`);
      await expect
        .poll(() => page.textContent('#loading-text'), { timeout: 10_000 })
        .toMatch(/Curves page: loading run 0\/one, run 0\/two: 0 of 2 requests done/);
      releaseRuns();
      await page.waitForSelector('main .error, main [role="alert"]');
    } finally {
      releaseRuns();
      await page.unroute(/\/api\/run\?/);
    }
  });

  it('draws the curves of the run', async () => {
    await page.goto(`${dash.url}#/curves?runs=0/bandit-run`);
    for (const title of ['Success', 'Reward', 'Entropy', 'KL', 'Grad norm', 'Kept ratio', 'Timings (s)']) {
      await page.waitForSelector(`figure[data-title="${title}"] canvas`);
    }
    await page.selectOption('#add-metric', 'actor/pg_loss');
    await page.waitForSelector('figure[data-title="actor/pg_loss"] canvas');
    await shot(page, 'curves');
  });

  it("opens the metrics guide's section on a chart: the Reward chart's paragraph of docs/reading-a-run.md", async () => {
    await page.goto(`${dash.url}#/curves?runs=0/bandit-run`);
    await page.click('figure[data-title="Reward"] details.guide > summary');
    const body = page.locator('figure[data-title="Reward"] details.guide[open] .guide-body');
    await body.waitFor();
    const guide = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'reading-a-run.md'), 'utf8');
    const heading = /<a id="reward"><\/a>\n## (.+)/.exec(guide)![1]!;
    expect(await body.locator('strong').textContent()).toBe(heading.replaceAll('`', ''));
    expect(await body.textContent()).toMatch(/rollout\/in_group_reward_std/);
    await shot(page, 'guide');
  });

  it('places every collapse-diagnostic step on the regime picture', async () => {
    await page.goto(`${dash.url}#/collapse?run=0/bandit-run`);
    await page.waitForSelector('#regimes svg');
    const logged = readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('collapse/mi_estimate')).length;
    expect(logged).toBe(2);
    expect(await page.locator('#regimes circle').count()).toBe(logged);
    expect(await page.textContent('#regime-now')).toMatch(/^Step 2: /);
    // The gradient-analysis table: step 2's buckets before the filter, with the sample counts training logged.
    const last = JSON.parse(readFileSync(join(runDir, 'metrics.jsonl'), 'utf8').trim().split('\n').at(-1)!) as Record<
      string,
      number
    >;
    const buckets = ['bucket_1', 'bucket_2', 'all'].filter((b) => `grad_analysis/prefilter/${b}/task` in last);
    expect(buckets).toContain('all');
    expect(
      await page
        .locator('#grad-analysis tr[data-bucket]')
        .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-bucket'))),
    ).toEqual(buckets);
    expect(await page.textContent('#grad-analysis p')).toMatch(/^Step 2, before the filter/);
    for (const b of buckets) {
      expect(await page.locator(`#grad-analysis tr[data-bucket="${b}"] td:nth-child(3)`).textContent()).toBe(
        String(last[`grad_analysis/prefilter/${b}/sample_count`]),
      );
    }
    await page.waitForSelector('figure[data-title="Task gradient norm per token, by reward-std bucket"] canvas');
    await shot(page, 'collapse');
    await page.locator('#grad-analysis').scrollIntoViewIfNeeded();
    await shot(page, 'grad-analysis');
  });

  it("shows the episodes' own observation, reasoning and per-token advantages", async () => {
    const records = readFileSync(join(runDir, 'rollouts', 'step-2.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as EpisodeRecord);
    const pick = records[records.length - 1]!;
    await page.goto(`${dash.url}#/trajectories?run=0/bandit-run&step=2`);
    await page.click(`#group-list a[data-episode="${pick.custom_id}"]`);
    const view = page.locator(`#episode-view[data-episode="${pick.custom_id}"]`);
    expect(await view.locator('pre.observation').first().textContent()).toBe(pick.turns[0]!.observation);
    expect(await view.locator('pre.think').first().textContent()).toBe(pick.turns[0]!.think || '(none)');
    const tokens = pick.turns[0]!.token_text!;
    expect(tokens.length).toBe(pick.turns[0]!.tokens);
    expect(await view.locator('pre.response').first().locator('span').count()).toBe(tokens.length);
    expect(await view.locator('pre.response').first().textContent()).toBe(tokens.join(''));
    // Search by outcome: only failures listed.
    await page.selectOption('#outcome-search', 'failure');
    const listed = await page.locator('#group-list a[data-episode]').count();
    expect(listed).toBe(records.filter((r) => !r.success).length);
    await page.selectOption('#outcome-search', '');
    await shot(page, 'trajectories');
  });

  it("issue 38 item 6: shows a gateway episode's messages, tool calls and tool results, and its trained tokens", async () => {
    // A gateway run's rollout line as src/gateway/agent-rollout.ts writes it: each turn one chat call (`call`), the
    // sampled tokens with their advantages.
    const agentRun = join(runsDir, 'agent-run');
    mkdirSync(join(agentRun, 'rollouts'), { recursive: true });
    writeFileSync(join(agentRun, 'config.yaml'), toYaml(tinyRun(agentRun)));
    writeFileSync(join(agentRun, 'metrics.jsonl'), `${JSON.stringify({ step: 1, 'train/success': 1 })}\n`);
    const tools = ['look', 'take'].map((name) => ({
      type: 'function',
      function: { name, parameters: { type: 'object', properties: { what: { type: 'string' } } } },
    }));
    const look = {
      id: 'call_s1-g0-m0_0-0',
      type: 'function' as const,
      function: { name: 'look', arguments: '{"what": "table"}' },
    };
    const asked = [
      { role: 'system', content: 'You are in a room. Find the key and take it.' },
      { role: 'user', content: 'Where is the key?' },
    ];
    const turn = (i: number, pieces: string[], advantage: number, call: object) => ({
      turn: i,
      observation: '',
      response: pieces.join(''),
      think: '',
      answer: '',
      actions: [],
      reward: i === 1 ? 1 : 0,
      penalty: 0,
      format_error: null,
      advantage,
      tokens: pieces.length,
      token_text: pieces,
      token_advantages: pieces.map(() => advantage),
      call,
    });
    const record = {
      custom_id: 'KeyAgent-seed7-g0-m0',
      step: 1,
      env: 'KeyAgent',
      seed: 7,
      group: 0,
      member: 0,
      success: true,
      total_reward: 1,
      score: 1,
      end_reason: 'terminated',
      num_actions: 2,
      context_truncations: 0,
      n_tokens: 9,
      kept: true,
      turns: [
        turn(
          0,
          ['<tool_call>', '\n{"name": "look", ', '"arguments": {"what": "table"}}', '\n</tool_call>', '<|im_end|>'],
          0.5,
          {
            messages: asked,
            tools,
            reply: { role: 'assistant', content: null, tool_calls: [look] },
          },
        ),
        turn(1, ['The key', ' is on', ' the table', '.'], 0.5, {
          messages: [
            ...asked,
            { role: 'assistant', content: '', tool_calls: [look] },
            { role: 'tool', tool_call_id: look.id, content: 'a brass key lies on the table' },
          ],
          tools,
          reply: { role: 'assistant', content: 'The key is on the table.' },
        }),
      ],
      messages: [],
    };
    writeFileSync(join(agentRun, 'rollouts', 'step-1.jsonl'), `${JSON.stringify(record)}\n`);

    await page.goto(`${dash.url}#/trajectories?run=0/agent-run&step=1`);
    const view = page.locator('#episode-view[data-episode="KeyAgent-seed7-g0-m0"]');
    const first = view.locator('.turn[data-turn="0"]');
    const second = view.locator('.turn[data-turn="1"]');
    await first.locator('.request .msg pre').first().waitFor(); // allTextContents does not wait for the page to render
    expect(await first.locator('.request .msg pre').allTextContents()).toEqual([
      'You are in a room. Find the key and take it.',
      'Where is the key?',
    ]);
    expect(await first.locator('.request > .label').textContent()).toBe('request: tools look, take');
    expect(await first.locator('.reply .msg pre.tool-call').textContent()).toBe('→ look({"what":"table"})');
    // The second call repeats the first's messages (not shown again), then the echoed call and its result.
    expect(await second.locator('.request > .label').textContent()).toMatch(/2 earlier messages as in turn 1$/);
    expect(await second.locator('.request .msg.role-tool .label').textContent()).toBe(
      `tool result of look (${look.id})`,
    );
    expect(await second.locator('.request .msg.role-tool pre').textContent()).toBe('a brass key lies on the table');
    expect(await second.locator('.reply .msg pre').textContent()).toBe('The key is on the table.');
    // The trained tokens, one coloured span each.
    const spans = first.locator('pre.response span');
    expect(await spans.count()).toBe(record.turns[0]!.token_text.length);
    expect(await first.locator('pre.response').textContent()).toBe(record.turns[0]!.response);
    expect(await spans.first().getAttribute('title')).toBe('advantage 0.500');
    expect(await view.textContent()).not.toMatch(/no valid action/);
    await shot(page, 'trajectories-agent');
    expect(errors).toEqual([]);
  });

  it("issue 39: shows a visual env's observation images, the pixels the env drew", async () => {
    // A real rollout of VisualFrozenLake (random actions, the tiny tokenizer), written as the trainer writes its lines.
    const visualRun = join(runsDir, 'visual-run');
    mkdirSync(join(visualRun, 'rollouts'), { recursive: true });
    writeFileSync(join(visualRun, 'config.yaml'), toYaml(tinyRun(visualRun)));
    writeFileSync(join(visualRun, 'metrics.jsonl'), `${JSON.stringify({ step: 1, 'train/success': 0 })}\n`);
    const agent = agentConfig({ maxTurns: 2 });
    const tokenizer = loadTokenizer(tinyTokenizerDir());
    const groups = new EnvGroups({
      tags: [{ env: 'VisualFrozenLake', nGroups: 1 }],
      groupSize: 1,
      mode: 'val',
      seed: 5,
    });
    const batch = await rollout({ groups, policy: randomPolicy(tokenizer, agent, 1), tokenizer, agent });
    await groups.close();
    const record = episodeRecord(batch.episodes[0]!, agent);
    writeFileSync(join(visualRun, 'rollouts', 'step-1.jsonl'), `${JSON.stringify(record)}\n`);
    const drawn = batch.episodes[0]!.turns[0]!.loop!.images![0]!;

    await page.goto(`${dash.url}#/trajectories?run=0/visual-run&step=1`);
    const view = page.locator(`#episode-view[data-episode="${record.custom_id}"]`);
    const img = view.locator('.observation-images img').first();
    await img.waitFor();
    // The browser decoded the PNG to the env's own pixels: read them back through a canvas (DOM code as a string: this
    // file is compiled without the DOM's types).
    const first = '#episode-view .observation-images img';
    await page.waitForFunction(`document.querySelector('${first}').complete`);
    const pixels = (await page.evaluate(`(() => {
      const i = document.querySelector('${first}');
      const c = document.createElement('canvas');
      c.width = i.naturalWidth;
      c.height = i.naturalHeight;
      const g = c.getContext('2d');
      g.drawImage(i, 0, 0);
      const d = g.getImageData(0, 0, c.width, c.height).data;
      return { width: c.width, height: c.height, rgb: [...d].filter((_, k) => k % 4 !== 3) };
    })()`)) as { width: number; height: number; rgb: number[] };
    expect([pixels.width, pixels.height]).toEqual([drawn.width, drawn.height]);
    expect(pixels.rgb).toEqual([...drawn.data]);
    expect(await view.locator('.observation-images img').count()).toBe(record.turns.length);
    await img.scrollIntoViewIfNeeded();
    await shot(page, 'trajectories-visual');
    expect(errors).toEqual([]);
  });

  it('shows success and pass@k of a ragen eval file', async () => {
    await runEval({ run: runDir, groups: 3, groupSize: 2, out: join(runDir, 'eval', 'val.jsonl') });
    await page.goto(`${dash.url}#/eval?run=0/bandit-run`);
    const table = page.locator('table.eval-table[data-file="val.jsonl"]');
    await table.waitFor();
    const eps = readFileSync(join(runDir, 'eval', 'val.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as EpisodeRecord);
    const rows = await table.locator('tr').allTextContents();
    for (const env of new Set(eps.map((e) => e.env))) {
      const mine = eps.filter((e) => e.env === env);
      const success = mine.filter((e) => e.success).length / mine.length;
      const seeds = new Set(mine.map((e) => e.seed));
      const pass = [...seeds].filter((s) => mine.some((e) => e.seed === s && e.success)).length / seeds.size;
      expect(
        rows.some(
          (r) =>
            r.startsWith(env) &&
            r.includes(`${(100 * success).toFixed(1)}%`) &&
            r.includes(`${(100 * pass).toFixed(1)}% (pass@2)`),
        ),
        `${env} in ${rows.join(' | ')}`,
      ).toBe(true);
    }
    await shot(page, 'eval');
  });

  it('plays an episode with the WASM engine inside the page', async () => {
    await page.goto(`${dash.url}#/play?run=0/bandit-run`);
    await page.click('#play-button');
    await page.waitForSelector('#play-status[data-done]', { timeout: 30_000 });
    const status = await page.textContent('#play-status');
    expect(status).toMatch(/^Episode finished: (success|failure), reward .*engine: wasm in this page/);
    expect(await page.locator('#play-turns .play-turn').count()).toBeGreaterThan(0);
    expect(await page.locator('#play-turns pre.actions').count()).toBeGreaterThan(0);
    await shot(page, 'play');
  });

  it("issue 39: plays a visual env in the page, each turn showing the observation image's own pixels", async () => {
    // The Bandit run's checkpoint, validating on VisualFrozenLake: a text model plays it (its prompts are text-only)
    // and the page draws what the env showed each turn.
    const playRun = join(runsDir, 'visual-play');
    cpSync(join(runDir, 'checkpoints'), join(playRun, 'checkpoints'), { recursive: true });
    cpSync(join(runDir, 'metrics.jsonl'), join(playRun, 'metrics.jsonl'));
    const config = parseYaml(readFileSync(join(runDir, 'config.yaml'), 'utf8')) as {
      env: { val: unknown[] };
      agent: Record<string, unknown>;
      logging: Record<string, unknown>;
    };
    config.env.val = [{ tag: 'VisualFrozenLake', groups: 1 }];
    config.agent.maxTurns = 2;
    config.logging.runDir = playRun;
    writeFileSync(join(playRun, 'config.yaml'), toYaml(config));

    await page.goto(`${dash.url}#/play?run=0/visual-play`);
    await page.selectOption('#play-env', 'VisualFrozenLake');
    await page.fill('#play-seed', '7');
    await page.selectOption('#play-pace', '0');
    await page.click('#play-button');
    await page.waitForSelector('#play-status[data-done]', { timeout: 30_000 });
    expect(await page.textContent('#play-status')).toMatch(/^Episode finished/);
    const cards = await page.locator('#play-turns .play-turn').count();
    expect(cards).toBeGreaterThan(0);
    expect(await page.locator('#play-turns .play-turn .observation-images canvas').count()).toBe(cards);
    // turn 1's canvas holds the pixels the env drew at the page's seed (validation seeds: group 0 takes the seed)
    const pixels = (await page.evaluate(`(() => {
      const c = document.querySelector('#play-turns .play-turn .observation-images canvas');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      return { width: c.width, height: c.height, rgb: [...d].filter((_, k) => k % 4 !== 3) };
    })()`)) as { width: number; height: number; rgb: number[] };
    const drawn = (await makeEnv('VisualFrozenLake').reset({ seed: 7, mode: 'val' })).images![0]!;
    expect([pixels.width, pixels.height]).toEqual([drawn.width, drawn.height]);
    expect(pixels.rgb).toEqual([...drawn.data]);
    await shot(page, 'play-visual');
    expect(errors).toEqual([]);
  });

  it('issue 39: a vision-language checkpoint plays from the pixels in the page, as the local engine plays it', async () => {
    // frozenlake-vision-ppo's settings with the shipped ragen-tiny-vl as its checkpoint (full weights and the processor)
    const vlRun = join(runsDir, 'vision-play');
    const config = loadConfig({
      config: 'frozenlake-vision-ppo',
      overrides: [`logging.runDir=${vlRun}`, 'agent.maxTurns=3', 'env.val=[{tag: VisualFrozenLake, groups: 1}]'],
    });
    mkdirSync(vlRun, { recursive: true });
    saveConfig(config, vlRun);
    cpSync(join(runDir, 'metrics.jsonl'), join(vlRun, 'metrics.jsonl'));
    const shipped = findModelPath('ragen-tiny-vl')!;
    await writeCheckpoint(
      join(vlRun, 'checkpoints'),
      { step: 1, data: {} },
      {
        writeModel: (dir) => cpSync(shipped, dir, { recursive: true }),
      },
    );

    await page.goto(`${dash.url}#/play?run=0/vision-play`);
    await page.selectOption('#play-env', 'VisualFrozenLake');
    await page.fill('#play-seed', '11');
    await page.fill('#play-temp', '0');
    await page.selectOption('#play-pace', '0');
    await page.click('#play-button');
    await page.waitForSelector('#play-status[data-done]', { timeout: 60_000 });
    expect(await page.textContent('#play-status')).toMatch(
      /^Episode finished.*a vision-language model reading the images/,
    );
    const shown = await page.locator('#play-turns pre.response').allTextContents();

    // the same episode in Node: the local engine (WASM) with the same checkpoint, greedy, reading the same images
    const tokenizer = loadTokenizer(shipped);
    const engine = await LocalEngine.fromPretrained(shipped, { backend: 'wasm' });
    const agent = agentConfig(config.agent);
    const inner = enginePolicy(engine, tokenizer, agent, { temperature: 0, seed: 11 });
    const said: string[] = [];
    const policy: Policy = {
      ...inner,
      async generate(requests, call) {
        const gens = await inner.generate(requests, call);
        said.push(tokenizer.decode(gens[0]!.tokens));
        return gens;
      },
    };
    const groups = new EnvGroups({
      tags: [{ env: 'VisualFrozenLake', nGroups: 1, config: config.env.config['VisualFrozenLake'] ?? {} }],
      groupSize: 1,
      mode: 'val',
      seed: 11,
    });
    try {
      await rollout({ groups, policy, tokenizer, agent });
    } finally {
      await groups.close();
      engine.dispose();
    }
    expect(said.length).toBeGreaterThan(0);
    expect(shown).toEqual(said);
    await shot(page, 'play-vision');
    expect(errors).toEqual([]);
  });

  it('explains a broken run directory in the page and marks early warnings on the timeline', async () => {
    const broken = join(runsDir, 'crashed');
    mkdirSync(broken);
    // Hand-written metrics: entropy_drop turns on at step 3 and again at 5; a truncated last line; no config.yaml.
    const rows = [1, 2, 3, 4, 5].map((step) => ({
      step,
      'collapse/mi_estimate': 0.5 - 0.05 * step,
      'collapse/conditional_entropy': 1,
      'early_warning/entropy_drop': step === 3 || step === 5 ? 1 : 0,
      'made/up': 1,
    }));
    writeFileSync(
      join(broken, 'metrics.jsonl'),
      `${rows.map((r) => JSON.stringify(r)).join('\n')}\n{"step": 6, "actor/ent`,
    );
    await page.goto(`${dash.url}#/collapse?run=0/crashed`);
    const problems = await page.locator('.problems').textContent();
    expect(problems).toMatch(/config\.yaml is missing/);
    expect(problems).toMatch(/last line \(6\) is truncated/);
    expect(problems).toMatch(/made\/up/);
    expect(await page.locator('#warnings tr td:first-child').allTextContents()).toEqual(['3', '5']);
    expect(await page.textContent('#regime-now')).toMatch(/template collapse/);
    expect(await page.textContent('#no-grad-analysis')).toMatch(/trainer\.gradAnalysis\.every/);
    await shot(page, 'broken-run');
    // Comparing it with the real run: one legend chip per run, lines named by run.
    await page.goto(`${dash.url}#/curves?runs=0/bandit-run,0/crashed`);
    await page.waitForSelector('figure[data-title="Success"] canvas');
    expect(await page.locator('.run-chip').count()).toBe(2);
    expect(await page.locator('figure[data-title="Success"] .chart-key').textContent()).toBe(
      'train/successval/success',
    );
    expect(await page.locator('.problems li').first().textContent()).toMatch(/^crashed: /);
    expect(errors).toEqual([]);
  });

  it('updates an open curves page when its run appends a step, without reloading', async () => {
    const dir = join(runsDir, 'appending');
    mkdirSync(dir);
    const line = (step: number) =>
      `${JSON.stringify({ step, 'train/success': step / 10, 'actor/entropy': 1 / step })}\n`;
    writeFileSync(join(dir, 'metrics.jsonl'), line(1));
    await page.goto(`${dash.url}#/curves?runs=0/appending`);
    await page.waitForSelector('.run-chip:has-text("step 1")');
    await page.evaluate(() => ((globalThis as unknown as { sameDocument: boolean }).sameDocument = true));
    appendFileSync(join(dir, 'metrics.jsonl'), line(2));
    await page.waitForSelector('.run-chip:has-text("step 2")', { timeout: 10_000 });
    expect(await page.evaluate(() => (globalThis as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);
    await shot(page, 'live-curves');
    // The runs table sorts by a column on a header click, and reverses on a second click.
    await page.goto(dash.url);
    await page.waitForSelector('tr[data-run="0/appending"]');
    const order = () => page.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-run')));
    const marked = () =>
      page
        .locator('thead th')
        .evaluateAll((ths) => ths.filter((t) => /[▲▼]/.test(t.textContent ?? '')).map((t) => t.textContent));
    expect(await marked(), 'no column is marked before a sort').toEqual([]);
    await page.click('th:has-text("run") >> nth=0');
    expect(await order()).toEqual([
      '0/agent-run',
      '0/appending',
      '0/bandit-run',
      '0/crashed',
      '0/vision-play',
      '0/visual-play',
      '0/visual-run',
    ]);
    expect(await marked()).toEqual(['run ▲']);
    await page.click('th:has-text("run") >> nth=0');
    expect(await order()).toEqual([
      '0/visual-run',
      '0/visual-play',
      '0/vision-play',
      '0/crashed',
      '0/bandit-run',
      '0/appending',
      '0/agent-run',
    ]);
  });

  // Two runs compared: bandit-run and a copy whose config and success values were changed by hand (known differences).
  type Plotted = {
    plot: {
      series: { label: string; dash?: number[] }[];
      scales: { y: { distr: number } };
      valToPos(v: number, s: string): number;
    };
  };
  const records: Record<'bandit-run' | 'bandit-grpo', Record<string, number>[]> = {
    'bandit-run': [],
    'bandit-grpo': [],
  };
  const compare = async () => {
    await page.goto(`${dash.url}#/curves?runs=0/bandit-run,0/bandit-grpo`);
    await page.locator('figure[data-title="Success"] canvas').first().waitFor();
    return page.locator('figure[data-title="Success"]');
  };

  it('compares runs: a table of the config keys on which they differ', async () => {
    const other = join(runsDir, 'bandit-grpo');
    mkdirSync(other);
    const config = parseYaml(readFileSync(join(runDir, 'config.yaml'), 'utf8')) as {
      algo: Record<string, unknown>;
      trainer: Record<string, unknown>;
    };
    expect([config.algo['advEstimator'], config.trainer['actorLr']]).not.toContain(undefined);
    const before = [String(config.algo['advEstimator']), String(config.trainer['actorLr'])];
    config.algo['advEstimator'] = 'grpo';
    config.trainer['actorLr'] = 0.5;
    writeFileSync(join(other, 'config.yaml'), toYaml(config));
    records['bandit-run'] = readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, number>);
    records['bandit-grpo'] = records['bandit-run'].map((r) => ({
      ...r,
      ...('train/success' in r ? { 'train/success': 0.9 - r['step']! / 8 } : {}),
      ...('val/success' in r ? { 'val/success': 0.5 + r['step']! / 8 } : {}),
    }));
    writeFileSync(join(other, 'metrics.jsonl'), `${records['bandit-grpo'].map((r) => JSON.stringify(r)).join('\n')}\n`);
    await compare();
    const rows = await page
      .locator('#config-diff tbody tr')
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    expect(rows).toEqual([
      ['algo.advEstimator', before[0], 'grpo'],
      ['trainer.actorLr', before[1], '0.5'],
    ]);
    expect(await page.textContent('.config-diff summary')).toMatch(
      /^Config differences \(2 keys differ, \d+ are the same\)$/,
    );
  });

  it("keys each chart in one row that says which dash is which metric, and shows the hovered step's values", async () => {
    const fig = await compare();
    const items = await fig
      .locator('.key-item')
      .evaluateAll((els) => els.map((e) => [e.getAttribute('data-key'), e.getAttribute('data-dash')]));
    const drawn = await fig.evaluate((f) =>
      (f as unknown as Plotted).plot.series.slice(1).map((s) => [s.label, (s.dash ?? []).join(' ')]),
    );
    expect(items.map((i) => i[0])).toEqual(['train/success', 'val/success']);
    expect(new Set(items.map((i) => i[1])).size).toBe(2);
    expect(drawn).toHaveLength(4);
    for (const [label, dash] of drawn) expect(items.find((i) => label!.endsWith(` · ${i[0]}`))?.[1], label).toBe(dash);
    expect(await fig.locator('.u-legend').count()).toBe(0);
    expect((await fig.locator('.chart-key').boundingBox())!.height).toBeLessThan(24);
    const box = (await fig.locator('.u-over').boundingBox())!;
    await page.mouse.move(box.x + box.width - 3, box.y + box.height / 2);
    expect(await fig.locator('.chart-readout').textContent()).toMatch(
      /^step 2: bandit-run · train\/success [\d.]+ · bandit-run · val\/success [\d.]+ · bandit-grpo · /,
    );
    await shot(page, 'compare-runs');
  });

  it('puts a chart on a log scale, where each decade takes the same height', async () => {
    await compare();
    const grad = page.locator('figure[data-title="Grad norm"]');
    await grad.locator('input.log-scale').check();
    expect(await grad.getAttribute('data-scale')).toBe('log');
    const log = await grad.evaluate((f) => {
      const p = (f as unknown as Plotted).plot;
      return {
        distr: p.scales.y.distr,
        d1: p.valToPos(1, 'y') - p.valToPos(10, 'y'),
        d2: p.valToPos(10, 'y') - p.valToPos(100, 'y'),
      };
    });
    expect(log.distr).toBe(3);
    expect(log.d1).toBeGreaterThan(0);
    expect(log.d1).toBeCloseTo(log.d2, 3);
    await grad.screenshot({ path: join(shots, 'log-scale.png') });
    await grad.locator('input.log-scale').uncheck();
    expect(await grad.evaluate((f) => (f as unknown as Plotted).plot.scales.y.distr)).toBe(1);
  });

  it("exports a chart's logged values as CSV, one column per line", async () => {
    const fig = await compare();
    const [file] = await Promise.all([page.waitForEvent('download'), fig.locator('button.csv').click()]);
    expect(file.suggestedFilename()).toBe('Success.csv');
    // Expected from the metrics files, unsmoothed (the page smooths its lines at 0.6).
    const cols = (['bandit-run', 'bandit-grpo'] as const).flatMap((run) =>
      ['train/success', 'val/success'].map((k) => [run, k] as const),
    );
    const steps = records['bandit-run']
      .filter((r) => 'train/success' in r || 'val/success' in r)
      .map((r) => r['step']!);
    const expected = [
      `step,${cols.map(([run, k]) => `${run} · ${k}`).join(',')}`,
      ...steps.map((s) =>
        [s, ...cols.map(([run, k]) => records[run].find((r) => r['step'] === s)?.[k] ?? '')].join(','),
      ),
    ];
    expect(readFileSync((await file.path())!, 'utf8')).toBe(`${expected.join('\n')}\n`);
    expect(errors).toEqual([]);
  });
});

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from './processes.js';
import { latencyFigures, type LatencyFigures } from './stats.js';

/**
 * The `cli` phase (issue 26): how long `obs` takes to start and answer, as an operator runs it
 * (`node bin/obs.js …`, the compiled sources already in .cache/obs), against its baseline in the same run:
 * a bare `node -e ''`, the least any command can cost. On a small tenant (one observation) for `tenant list`
 * and `audit verify`. Target: each command's median under 500 ms on a quiet machine.
 */

export interface CliResults {
  runs: number;
  baseline: LatencyFigures;
  commands: { command: string; figures: LatencyFigures; overBaseline: number }[];
  targetMs: number;
}

const timed = (args: string[], env: NodeJS.ProcessEnv): number => {
  const started = performance.now();
  execFileSync(process.execPath, args, { cwd: projectRoot, env, stdio: 'ignore' });
  return performance.now() - started;
};

export const runCli = ({ runs }: { runs: number }): CliResults => {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-cli-'));
  try {
    const env = { ...process.env, DATA_DIR: dataDir };
    const obs = (...words: string[]) => ['bin/obs.js', ...words];
    const created = JSON.parse(
      execFileSync(
        process.execPath,
        obs('tenant', 'create', '--name', 'bench', '--email', 'ops@bench.test', '--create', '--json'),
        {
          cwd: projectRoot,
          env,
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
        },
      ),
    ) as { id: string };
    writeFileSync(join(dataDir, 'bench-tenant'), created.id);
    const commands = [['help'], ['tenant', 'list'], ['audit', 'verify', '--tenant', created.id]];
    // The first start compiles the sources when they changed: not what an operator waits for each time.
    timed(obs('help'), env);
    const baseline: number[] = [];
    const samples = commands.map(() => [] as number[]);
    for (let run = 0; run < runs; run++) {
      baseline.push(timed(['-e', ''], env));
      commands.forEach((words, index) => samples[index]!.push(timed(obs(...words), env)));
    }
    const base = latencyFigures(baseline);
    return {
      runs,
      baseline: base,
      commands: commands.map((words, index) => {
        const figures = latencyFigures(samples[index]!);
        return {
          command: `obs ${words.join(' ').replace(created.id, '<tenant>')}`,
          figures,
          overBaseline: Math.round((figures.p50Ms / base.p50Ms) * 100) / 100,
        };
      }),
      targetMs: 500,
    };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
};

export const reportCli = (results: CliResults): void => {
  console.log(
    [
      `cli: node -e '' p50 ${Math.round(results.baseline.p50Ms)} ms (baseline), over ${results.runs} runs`,
      ...results.commands.map(
        ({ command, figures, overBaseline }) =>
          `cli: ${command} p50 ${Math.round(figures.p50Ms)} ms, max ${Math.round(figures.maxMs)} ms (${overBaseline}× the baseline; target p50 < ${results.targetMs} ms)`,
      ),
    ].join('\n'),
  );
};

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EmmettMeasurement, EmmettResults } from './emmett.js';
import { projectRoot } from './processes.js';
import {
  check,
  dec,
  int,
  ms,
  renderText,
  replaceBetweenMarkers,
  table,
  type Check,
  type Results,
} from './report.js';

/**
 * The `emmett` phase's medians, targets, stdout table and report: docs/bench/emmett.json and its section of
 * docs/benchmarks.md, written whenever the phase ran (BENCH_WRITE=0 keeps them), since it is usually run on
 * its own; a full run also carries it in docs/bench/latest.json and its targets in the table of all targets.
 */

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

export interface EmmettMedians {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  nodeCpuMs: number;
  postgresCpuMs: number;
  totalCpuMs: number;
  /** Summed over the rounds: errors, timeouts and non-2xx answers. */
  failures: number;
}

const medians = (runs: readonly EmmettMeasurement[]): EmmettMedians => ({
  requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
  p50Ms: median(runs.map((r) => r.p50Ms)),
  p99Ms: median(runs.map((r) => r.p99Ms)),
  nodeCpuMs: median(runs.map((r) => r.cpu.nodeMs)),
  postgresCpuMs: median(runs.map((r) => r.cpu.postgresMs)),
  totalCpuMs: median(runs.map((r) => r.cpu.totalMs)),
  failures: runs.reduce((n, r) => n + r.errors + r.timeouts + r.non2xx, 0),
});

export interface EmmettComparison {
  service: EmmettMedians;
  emmett: EmmettMedians;
  /**
   * Service ÷ emmett: throughput, then CPU per request (node alone, its PostgreSQL backends, both). Each is
   * the median of the rounds' own ratios: a round's two measurements ran one after the other, so a change
   * in the machine's other load between rounds cancels out of the ratio, where it would not out of a ratio
   * of two medians taken from different rounds.
   */
  requestsPerSecond: number;
  nodeCpu: number;
  postgresCpu: number;
  totalCpu: number;
}

export interface EmmettReport {
  create: EmmettComparison;
  list: EmmettComparison;
}

const compare = (service: EmmettMeasurement[], emmett: EmmettMeasurement[]): EmmettComparison => {
  const ratio = (figure: (m: EmmettMeasurement) => number) =>
    median(service.map((s, round) => figure(s) / figure(emmett[round]!)));
  return {
    service: medians(service),
    emmett: medians(emmett),
    requestsPerSecond: ratio((m) => m.requestsPerSecond),
    nodeCpu: ratio((m) => m.cpu.nodeMs),
    postgresCpu: ratio((m) => m.cpu.postgresMs),
    totalCpu: ratio((m) => m.cpu.totalMs),
  };
};

export const emmettReport = (r: EmmettResults): EmmettReport => ({
  create: compare(r.service.create, r.emmett.create),
  list: compare(r.service.list, r.emmett.list),
});

export const emmettChecks = (r: EmmettResults): Check[] => {
  const { create, list } = emmettReport(r);
  return [
    check('PostgreSQL: create req/s, service ÷ emmett', create.requestsPerSecond, '>=', 1.0),
    check('PostgreSQL: CPU per create (node + PostgreSQL), service ÷ emmett', create.totalCpu, '<=', 1.0),
    check('PostgreSQL: CPU per list of 50 (node + PostgreSQL), service ÷ emmett', list.totalCpu, '<=', 0.5),
    check(
      'emmett phase errors + timeouts + non-2xx (sanity)',
      create.service.failures + create.emmett.failures + list.service.failures + list.emmett.failures,
      '=',
      0,
    ),
  ];
};

const f2 = (n: number) => n.toFixed(2);
const f3 = (n: number) => n.toFixed(3);

export const emmettText = (r: EmmettResults): string => {
  const report = emmettReport(r);
  const rows = [
    [
      'emmett peer (medians)',
      'service req/s',
      'emmett req/s',
      'ratio',
      'CPU ms/req node',
      'node + PG',
      'CPU ratios node, node + PG',
    ],
  ];
  for (const [name, c] of [
    ['create', report.create],
    ['list of 50', report.list],
  ] as const)
    rows.push([
      name,
      int(c.service.requestsPerSecond),
      int(c.emmett.requestsPerSecond),
      f2(c.requestsPerSecond),
      `${f3(c.service.nodeCpuMs)} / ${f3(c.emmett.nodeCpuMs)}`,
      `${f3(c.service.totalCpuMs)} / ${f3(c.emmett.totalCpuMs)}`,
      `${f2(c.nodeCpu)}, ${f2(c.totalCpu)}`,
    ]);
  return renderText(rows);
};

const roundRows = (r: EmmettResults): string[][] =>
  (['create', 'list'] as const).flatMap((op) =>
    r.service[op].map((s, i) => {
      const e = r.emmett[op][i]!;
      const cpu = (m: EmmettMeasurement) =>
        `${f3(m.cpu.nodeMs)} + ${f3(m.cpu.postgresMs)} (${m.cpu.backendsAppeared}↑ ${m.cpu.backendsVanished}↓)`;
      return [
        `${op === 'create' ? 'create' : 'list of 50'}, round ${i + 1}`,
        int(s.requestsPerSecond),
        int(e.requestsPerSecond),
        cpu(s),
        cpu(e),
      ];
    }),
  );

export const emmettMarkdown = (r: EmmettResults, machine: Results['machine']): string => {
  const report = emmettReport(r);
  const row = (name: string, c: EmmettComparison) => [
    name,
    `${int(c.service.requestsPerSecond)} / ${int(c.emmett.requestsPerSecond)}`,
    `**${f2(c.requestsPerSecond)}**`,
    `${ms(c.service.p99Ms)} / ${ms(c.emmett.p99Ms)}`,
    `${f3(c.service.nodeCpuMs)} / ${f3(c.emmett.nodeCpuMs)} (${f2(c.nodeCpu)})`,
    `${f3(c.service.postgresCpuMs)} / ${f3(c.emmett.postgresCpuMs)} (${f2(c.postgresCpu)})`,
    `${f3(c.service.totalCpuMs)} / ${f3(c.emmett.totalCpuMs)} (**${f2(c.totalCpu)}**)`,
  ];
  const checks = emmettChecks(r);
  return [
    `Measured ${machine.date} on ${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}, load average ` +
      `${dec(machine.loadAverageBefore, 2)} before and ${dec(machine.loadAverageAfter, 2)} after; ` +
      `${r.connections} connections, ${r.durationS} s per measurement, medians of ${r.rounds} interleaved rounds; ` +
      'each ratio is the median of the rounds’ own ratios.',
    table(
      [
        'PostgreSQL, service / emmett',
        'req/s',
        'req/s ratio',
        'p99',
        'CPU ms/req, node (ratio)',
        'PostgreSQL backends (ratio)',
        'node + PostgreSQL (ratio)',
      ],
      [row('`POST …/observations`', report.create), row('`GET …/observations?limit=50`', report.list)],
    ),
    table(
      [
        'Round',
        'service req/s',
        'emmett req/s',
        'service CPU ms/req node + PG (backends ↑ appeared ↓ gone)',
        'emmett CPU ms/req node + PG',
      ],
      roundRows(r),
    ),
    table(
      ['Target', 'Measured', 'Target', 'Result'],
      checks.map((c) => [c.name, dec(c.value, 2), `${c.op} ${c.target}`, c.pass ? 'pass' : '**miss**']),
    ),
  ].join('\n\n');
};

const start = '<!-- bench:emmett:start -->';
const end = '<!-- bench:emmett:end -->';

export const writeEmmettReports = async (
  r: EmmettResults,
  machine: Results['machine'],
  source: Results['source'],
): Promise<string[]> => {
  if (process.env.BENCH_WRITE === '0') return [];
  mkdirSync(join(projectRoot, 'docs', 'bench'), { recursive: true });
  const jsonFile = join(projectRoot, 'docs', 'bench', 'emmett.json');
  const report = { machine, source, ...r, medians: emmettReport(r), checks: emmettChecks(r) };
  writeFileSync(jsonFile, `${JSON.stringify(report, null, 2)}\n`);
  const mdFile = await replaceBetweenMarkers(start, end, emmettMarkdown(r, machine));
  return mdFile ? [jsonFile, mdFile] : [jsonFile];
};

import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from './processes.js';
import { renderText, replaceBetweenMarkers, type Results } from './report.js';
import type { SoakResults } from './soak.js';

/**
 * The endurance phase's output: the curve and the targets on stdout, the figures as JSON, and the
 * generated part of docs/benchmarks.md's "Endurance" section. Only a run of the full length (600 s or
 * more, BENCH_WRITE not 0) writes docs/bench/soak.json and docs/benchmarks.md; a shorter one writes its
 * JSON under the OS temp dir and says where.
 */

export interface SoakReport extends SoakResults {
  machine: Results['machine'];
  source: Results['source'];
}

const f1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '–');
const clock = (s: number) => `${Math.floor(s / 60)}:${String(Math.round(s % 60)).padStart(2, '0')}`;

export const soakText = (r: SoakResults): string => {
  const curve = renderText([
    ['time', 'RSS MiB', 'heap MiB after GC', 'GC ms', 'p50 ms', 'p99 ms', 'req/s', 'errors'],
    ...r.samples.map((s) => [
      clock(s.t),
      f1(s.rssMiB),
      f1(s.heapUsedMiB),
      f1(s.gcMs),
      s.t === 0 ? '' : f1(s.p50Ms),
      s.t === 0 ? '' : f1(s.p99Ms),
      s.t === 0 ? '' : f1(s.requestsPerSecond),
      s.t === 0 ? '' : String(s.errors),
    ]),
  ]);
  const minutes = renderText([
    ['minute', 'RSS MiB at end', 'heap MiB at end', 'p50 ms', 'p99 ms', 'req/s', 'errors'],
    ...r.minutes.map((m) => [
      `${clock(m.fromS)}–${clock(m.toS)}`,
      f1(m.rssMiB),
      f1(m.heapUsedMiB),
      f1(m.p50Ms),
      f1(m.p99Ms),
      f1(m.requestsPerSecond),
      String(m.errors),
    ]),
  ]);
  const operations = renderText([
    ['operation', 'requests', 'p50 ms', 'p99 ms', 'max ms', 'statuses'],
    ...Object.entries(r.operations).map(([op, o]) => [
      op,
      String(o.requests),
      f1(o.p50Ms),
      f1(o.p99Ms),
      f1(o.maxMs),
      Object.entries(o.statuses)
        .map(([status, n]) => `${status === '0' ? 'network error' : status} × ${n}`)
        .join(', '),
    ]),
  ]);
  const { heap, p99, totals, projection, webhooks, rss } = r;
  const facts = renderText([
    ['figure', 'value'],
    [
      'heap after GC',
      `${f1(heap.baselineMiB)} MiB at ${clock(heap.baselineAtS)} → ${f1(heap.endMiB)} MiB at the end: ` +
        `${heap.growthMiB >= 0 ? '+' : ''}${heap.growthMiB.toFixed(2)} MiB (limit ${heap.limitMiB.toFixed(2)}); ` +
        `slope ${heap.slopeMiBPerMinute.toFixed(3)} MiB/min (${heap.fittedGrowthMiB.toFixed(2)} MiB fitted)`,
    ],
    [
      'RSS',
      `${f1(rss.startMiB)} MiB before the load, ${f1(rss.baselineMiB)} after warm-up, ${f1(rss.endMiB)} at the end, ` +
        `max ${f1(rss.maxMiB)}`,
    ],
    [
      'p99 flat',
      `${f1(p99.first.p99Ms)} ms in ${clock(p99.first.fromS)}–${clock(p99.first.toS)} (${p99.first.requests} requests) → ` +
        `${f1(p99.last.p99Ms)} ms in ${clock(p99.last.fromS)}–${clock(p99.last.toS)} (${p99.last.requests}): × ${p99.ratio.toFixed(2)}`,
    ],
    [
      'requests',
      `${totals.requests} (${f1(totals.requestsPerSecond)} req/s), p50 ${f1(totals.p50Ms)} ms, p99 ${f1(totals.p99Ms)} ms ` +
        `(${totals.probed} in flight during a forced GC left out; p99 with them ${f1(totals.p99IncludingProbedMs)} ms); ` +
        `errors ${totals.errors} (5xx ${totals.serverErrors}, network ${totals.networkErrors}, dropped ${totals.dropped}); ` +
        `409 conflicts ${totals.conflicts}`,
    ],
    [
      'projection',
      `${projection.projected} of ${projection.created} created observations listed (${(projection.waitMs / 1000).toFixed(1)} s to check)`,
    ],
    [
      'webhooks',
      `${webhooks.received} of ${webhooks.expected} expected events arrived (drain ${(webhooks.drainMs / 1000).toFixed(1)} s); ` +
        `duplicates ${webhooks.duplicates}, unexpected ${webhooks.unexpected}; ` +
        Object.entries(webhooks.byType)
          .map(([type, e]) => `${type} ${e.received}/${e.expected}`)
          .join(', '),
    ],
  ]);
  const checks = renderText(
    r.checks.map((c) => [
      c.pass ? 'PASS' : 'FAIL',
      c.name,
      `${c.value.toFixed(2)}${c.unit}`,
      `target ${c.op} ${Number(c.target.toFixed(2))}${c.unit}`,
    ]),
  );
  return [
    `Endurance: ${r.settings.durationS} s at ${r.settings.rate} req/s, ${r.settings.tenants} tenants, warm-up ${r.warmupS.toFixed(0)} s`,
    curve,
    minutes,
    operations,
    facts,
    checks,
  ].join('\n\n');
};

const table = (head: string[], rows: string[][]): string =>
  [head, head.map(() => '---'), ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');

export const soakMarkdown = (r: SoakReport): string => {
  const { heap, p99, totals, projection, webhooks } = r;
  return [
    `Run of ${r.machine.date.slice(0, 16).replace('T', ' ')} UTC on ${r.machine.cpus} × ${r.machine.cpuModel}, ` +
      `Node ${r.machine.node}; commit ${r.source.commit ?? 'unknown'}` +
      `${r.source.uncommittedChanges ? ' with uncommitted changes' : ''}; ${r.settings.durationS} s at ` +
      `${r.settings.rate} req/s over ${r.settings.tenants} tenants; 1-minute load average ` +
      `${r.machine.loadAverageBefore} before and ${r.machine.loadAverageAfter} after.`,
    table(
      ['Minute', 'RSS MiB (end)', 'Heap MiB after GC (end)', 'p50 ms', 'p99 ms', 'req/s', 'Errors'],
      r.minutes.map((m) => [
        `${clock(m.fromS)}–${clock(m.toS)}`,
        f1(m.rssMiB),
        f1(m.heapUsedMiB),
        f1(m.p50Ms),
        f1(m.p99Ms),
        f1(m.requestsPerSecond),
        String(m.errors),
      ]),
    ),
    `Heap after GC ${f1(heap.baselineMiB)} MiB at ${clock(heap.baselineAtS)}, ${f1(heap.endMiB)} MiB at the end ` +
      `(${heap.growthMiB >= 0 ? '+' : ''}${heap.growthMiB.toFixed(2)} MiB; slope ${heap.slopeMiBPerMinute.toFixed(3)} MiB/min). ` +
      `p99 ${f1(p99.first.p99Ms)} ms in ${clock(p99.first.fromS)}–${clock(p99.first.toS)}, ${f1(p99.last.p99Ms)} ms in ` +
      `${clock(p99.last.fromS)}–${clock(p99.last.toS)} (× ${p99.ratio.toFixed(2)}). ${totals.requests} requests, ` +
      `${totals.errors} errors, ${totals.serverErrors} 5xx, ${totals.conflicts} 409 conflicts; ` +
      `${projection.projected} of ${projection.created} observations projected; ${webhooks.received} of ` +
      `${webhooks.expected} webhook events delivered, ${webhooks.duplicates} duplicates. The whole curve, every ` +
      `10 s, is in \`docs/bench/soak.json\`.`,
    table(
      ['Target', 'Measured', 'Target', 'Result'],
      r.checks.map((c) => [
        c.name,
        `${c.value.toFixed(2)}${c.unit}`,
        `${c.op} ${Number(c.target.toFixed(2))}${c.unit}`,
        c.pass ? 'pass' : '**miss**',
      ]),
    ),
  ].join('\n\n');
};

const start = '<!-- bench:soak:start -->';
const end = '<!-- bench:soak:end -->';

export const writeSoakReports = async (r: SoakReport): Promise<string[]> => {
  const full = r.settings.durationS >= 600 && process.env.BENCH_WRITE !== '0';
  if (!full) {
    const file = join(tmpdir(), `bench-soak-${r.machine.date.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(r, null, 2)}\n`);
    return [file];
  }
  mkdirSync(join(projectRoot, 'docs', 'bench'), { recursive: true });
  const jsonFile = join(projectRoot, 'docs', 'bench', 'soak.json');
  writeFileSync(jsonFile, `${JSON.stringify(r, null, 2)}\n`);
  const mdFile = await replaceBetweenMarkers(start, end, soakMarkdown(r));
  return mdFile ? [jsonFile, mdFile] : [jsonFile];
};

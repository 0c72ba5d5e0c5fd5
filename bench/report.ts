import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, platform, totalmem } from 'node:os';
import { join } from 'node:path';
import * as prettier from 'prettier';
import type { RebuildPhaseResults } from './audit.js';
import type { AuthResults } from './auth.js';
import type { CvResults } from './cv.js';
import type { EmmettResults } from './emmett.js';
import type { GrowthResults } from './growth.js';
import type { HttpResults } from './http.js';
import type { MillionResults } from './million.js';
import { postgresMarkdown, type PostgresResults } from './postgres-report.js';
import { projectRoot } from './processes.js';
import type { ScaleoutResults } from './scaleout.js';
import type { AppendResults, CatchUpResults } from './store.js';
import type { WebhookResults } from './webhooks.js';

/** Targets with pass/fail, the stdout table, docs/bench/latest.json and the generated part of docs/benchmarks.md. */

export interface Check {
  name: string;
  value: number;
  op: '>=' | '<' | '<=' | '=';
  target: number;
  unit: string;
  pass: boolean;
}

export interface Results {
  machine: {
    cpuModel: string;
    cpus: number;
    node: string;
    os: string;
    totalMemoryMb: number;
    date: string;
    /** 1-minute load average before and after: other work on the machine shows here. */
    loadAverageBefore: number;
    loadAverageAfter: number;
  };
  /** The code measured: HEAD and whether the working tree had uncommitted changes (null outside git). */
  source: { commit: string | null; uncommittedChanges: boolean | null };
  settings: Record<string, number>;
  http: HttpResults & {
    createPerEcho: number;
    listPerEcho: number;
    createPerPeer: number;
    listPerPeer: number;
  };
  scaleout: ScaleoutResults;
  append: AppendResults & { batchedPerUnbatched: number };
  catchUp: CatchUpResults & { projectionPerRawRead: number };
  million: MillionResults;
  growth: GrowthResults;
  auth: AuthResults;
  webhooks: WebhookResults;
  cv: CvResults;
  rebuild: RebuildPhaseResults;
  /** The phases that ran on PostgreSQL too (BENCH_BACKENDS); null when it did not run. */
  postgres: PostgresResults | null;
  /** The service against the emmett peer on PostgreSQL (its own section and docs/bench/emmett.json too). */
  emmett: EmmettResults | null;
  checks: Check[];
  totalSeconds: number;
}

/** Read-only git queries; the benchmark never changes the repository. */
export const source = (): Results['source'] => {
  const git = (...args: string[]) => {
    try {
      return execFileSync('git', args, {
        cwd: projectRoot,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      });
    } catch {
      return null;
    }
  };
  const commit = git('rev-parse', '--short', 'HEAD')?.trim() ?? null;
  const status = git('status', '--porcelain', '--untracked-files=no');
  return { commit, uncommittedChanges: status === null ? null : status.trim() !== '' };
};

export const loadAverage = (): number => Math.round((loadavg()[0] ?? 0) * 100) / 100;

export const machine = (loadAverageBefore: number): Results['machine'] => ({
  cpuModel: cpus()[0]?.model ?? 'unknown',
  cpus: cpus().length,
  node: process.version,
  os: `${platform()} ${release()}`,
  totalMemoryMb: Math.round(totalmem() / 1024 / 1024),
  date: new Date().toISOString(),
  loadAverageBefore,
  loadAverageAfter: loadAverage(),
});

export const check = (name: string, value: number, op: Check['op'], target: number, unit = ''): Check => ({
  name,
  value,
  op,
  target,
  unit,
  pass:
    op === '>='
      ? value >= target
      : op === '<'
        ? value < target
        : op === '<='
          ? value <= target
          : value === target,
});

export const int = (n: number) => Math.round(n).toLocaleString('en-US');
export const dec = (n: number, digits: number) => n.toFixed(digits);
export const ms = (n: number) => `${dec(n, 1)} ms`;

export const table = (head: string[], rows: string[][]): string =>
  [head, head.map(() => '---'), ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');

export const scaleoutTable = (
  s: ScaleoutResults,
  title = `Scale-out: \`ROLE=api\` processes + one \`ROLE=worker\` on one \`DATA_DIR\`, ${s.connections} connections in all`,
): string => {
  const row = (name: string, f: ScaleoutResults['one']['create'], ratio: string) => [
    name,
    `${int(f.requestsPerSecond)} (${f.perProcess.map(int).join(' + ')})`,
    ratio,
    ms(f.p50Ms),
    ms(f.p99Ms),
    `${f.errors} / ${f.timeouts} / ${f.non2xx}`,
  ];
  const r = s.readYourWrites;
  return [
    table(
      [title, 'req/s (per process)', '2 ÷ 1', 'p50', 'p99 (largest)', 'errors / timeouts / non-2xx'],
      [
        row('`POST …/observations`, 1 API process', s.one.create, '—'),
        row('`POST …/observations`, 2 API processes', s.two.create, dec(s.createRatio, 2)),
        row('`GET …/observations?limit=50`, 1 API process', s.one.list, '—'),
        row('`GET …/observations?limit=50`, 2 API processes', s.two.list, dec(s.listRatio, 2)),
      ],
    ),
    `Read-your-writes across processes: ${int(r.checks)} creations, alternately on A and B, each followed by a ` +
      `list with \`minPosition\` on the other: ${r.violations} violations, ${r.unavailable} answered 503, ` +
      `${r.otherFailures} other failures; that list took p50 ${ms(r.listLatency.p50Ms)}, p99 ${ms(r.listLatency.p99Ms)}.`,
  ].join('\n\n');
};

const growthTables = (g: GrowthResults): string => {
  const sizes = g.sizes.map((size) => `${int(size.observations)} observations`);
  const largest = g.sizes.at(-1)!;
  return [
    table(
      [`Growth: one tenant, lists at ${g.listConnections} connections (p50 / p99, req/s)`, ...sizes],
      [
        [
          'Seed; projection catch-up',
          ...g.sizes.map((s) => `${dec(s.seedSeconds, 1)} s; ${dec(s.catchUpSeconds, 1)} s`),
        ],
        ...largest.lists.map((list, i) => [
          `${list.name}: \`?${list.query}\``,
          ...g.sizes.map((size) => {
            const l = size.lists[i]!;
            return l.lowerBound
              ? `none answered within ${dec(l.p99Ms / 1000, 0)} s`
              : `${ms(l.p50Ms)} / ${ms(l.p99Ms)}, ${int(l.requestsPerSecond)}`;
          }),
        ]),
      ],
    ),
    table(
      ['Growth: `POST …/observations` at 50 connections, another tenant', 'req/s', 'p50', 'p99'],
      [
        [
          'Store as provisioned (empty)',
          int(g.createEmpty.requestsPerSecond),
          ms(g.createEmpty.p50Ms),
          ms(g.createEmpty.p99Ms),
        ],
        [
          `Store holding ${int(g.createFullStoreEvents)} events (${dec(g.createRatio, 2)} of empty)`,
          int(g.createFull.requestsPerSecond),
          ms(g.createFull.p50Ms),
          ms(g.createFull.p99Ms),
        ],
      ],
    ),
    `\`EXPLAIN QUERY PLAN\` of each list's SQL at ${int(largest.observations)} observations:`,
    '```text\n' +
      largest.plans.map((p) => `-- ${p.name}\n${p.sql}\n${p.plan.join('\n')}`).join('\n\n') +
      '\n```',
  ].join('\n\n');
};

export const renderMarkdown = (r: Results): string => {
  const { http, scaleout, append, catchUp, million, growth, auth, webhooks, cv, rebuild } = r;
  const httpRow = (name: string, f: HttpResults['echo'], ratio: string) => [
    name,
    int(f.requestsPerSecond),
    ratio,
    f.cpuMsPerRequest === null || f.cpuMsPerRequest === undefined ? '—' : dec(f.cpuMsPerRequest, 3),
    ms(f.p50Ms),
    ms(f.p99Ms),
    ms(f.maxMs),
    `${f.errors} / ${f.timeouts} / ${f.non2xx}`,
  ];
  const missed = r.checks.filter((c) => !c.pass);
  return [
    `Run of ${r.machine.date.slice(0, 10)} on ${r.machine.cpus} × ${r.machine.cpuModel}, ${r.machine.totalMemoryMb} MB RAM, ` +
      `Node ${r.machine.node}, ${r.machine.os}; autocannon ${http.connections} connections, ${http.durationS} s per endpoint; ` +
      `commit ${r.source.commit ?? 'unknown'}${r.source.uncommittedChanges ? ' with uncommitted changes' : ''}; ` +
      `whole run ${int(r.totalSeconds)} s, 1-minute load average ${r.machine.loadAverageBefore} before and ` +
      `${r.machine.loadAverageAfter} after. ` +
      (http.authenticated
        ? `The HTTP load ran as a fresh tenant's API key with the observation scopes.`
        : `The HTTP load ran against the open routes of tenant ${http.tenantId}.`),
    table(
      [
        'HTTP',
        'req/s',
        'vs CRUD peer (vs echo)',
        'server CPU ms/req',
        'p50',
        'p99',
        'max',
        'errors / timeouts / non-2xx',
      ],
      [
        httpRow('`POST /echo` (bare Koa, the ceiling)', http.echo, '— (1.00)'),
        httpRow('CRUD peer `POST …/observations` (baseline of create)', http.peerCreate, '1.00'),
        httpRow(
          `CRUD peer \`GET …/observations?limit=50\` (${int(http.peerObservationsBeforeList)} stored; baseline of list)`,
          http.peerList,
          '1.00',
        ),
        httpRow(
          '`POST …/observations`',
          http.create,
          `${dec(http.createPerPeer, 2)} (${dec(http.createPerEcho, 2)})`,
        ),
        httpRow(
          `\`GET …/observations?limit=50\` (${int(http.observationsBeforeList)} stored)`,
          http.list,
          `${dec(http.listPerPeer, 2)} (${dec(http.listPerEcho, 2)})`,
        ),
      ],
    ),
    scaleoutTable(scaleout),
    table(
      ['Embedded store', 'Figure'],
      [
        [
          `Append, 1 event per call (${int(append.events)} events)`,
          `${int(append.unbatchedEventsPerSecond)} events/s`,
        ],
        [
          `Append, ${append.batchSize} events per call`,
          `${int(append.batchedEventsPerSecond)} events/s (× ${dec(append.batchedPerUnbatched, 1)})`,
        ],
        [
          `Seed ${int(catchUp.events)} events, ${catchUp.eventsPerStream} per stream`,
          `${dec(catchUp.seedSeconds, 1)} s`,
        ],
        ['Raw `readAll`, pages of 500 (baseline)', `${int(catchUp.rawReadEventsPerSecond)} events/s`],
        [
          'Raw `readAll` with the projection’s type filter',
          `${int(catchUp.rawReadFilteredEventsPerSecond)} events/s`,
        ],
        [
          'Projection runner catch-up',
          `${int(catchUp.projectionEventsPerSecond)} events/s (${dec(catchUp.projectionPerRawRead, 2)} of raw)`,
        ],
        [
          `Seed ${int(million.events)} events`,
          `${dec(million.seedSeconds, 1)} s (${int(million.seedEventsPerSecond)} events/s)`,
        ],
        [
          `Catch-up over ${int(million.events)} events`,
          `${int(million.catchUpEventsPerSecond)} events/s, ${dec(million.catchUpSeconds, 1)} s`,
        ],
        [
          'Catch-up peak RSS',
          `${dec(million.peakRssMb, 0)} MB (${dec(million.startRssMb, 0)} MB at start; ` +
            `the in-process 100 ms sampler fired ${million.samples} times)`,
        ],
      ],
    ),
    growthTables(growth),
    table(
      [
        `Authentication: \`GET …/observations?limit=50\` (${int(auth.observations)} stored)`,
        'req/s',
        'vs unauthenticated',
        'p50',
        'p99',
        'max',
        'errors / timeouts / non-2xx',
      ],
      [
        httpRow('No authentication, before (`bench/open-service.ts`)', auth.open, '—'),
        httpRow('No authentication, after', auth.openAfter, '—'),
        httpRow('API key (`X-API-Key`)', auth.apiKey, dec(auth.apiKeyPerOpen, 2)),
        httpRow('User JWT (`Authorization: Bearer`)', auth.jwt, dec(auth.jwtPerOpen, 2)),
      ],
    ),
    table(
      ['Webhooks (one subscription, receiver answering 204)', 'Figure'],
      [
        [
          `Raw undici POSTs of the same bodies, ${webhooks.concurrency} at a time (baseline)`,
          `${int(webhooks.rawPostsPerSecond)} POSTs/s (${int(webhooks.rawPosts)} in ${dec(webhooks.rawSeconds, 2)} s, median of 3)`,
        ],
        [
          `Service deliveries of a ${int(webhooks.deliveries)}-event backlog, ${webhooks.concurrency} per subscription`,
          `${int(webhooks.serviceDeliveriesPerSecond)} deliveries/s (${dec(webhooks.serviceSeconds, 1)} s; ` +
            `${dec(webhooks.ratio, 2)} of raw; ${webhooks.duplicates} duplicates)`,
        ],
        [
          `Event \`occurredAt\` → arrival, ${webhooks.latency.samples} creations ${webhooks.latency.intervalMs} ms apart` +
            (webhooks.latency.createsPerSecond > 0
              ? `, beside ${int(webhooks.latency.createsPerSecond)} creates/s in another tenant (${webhooks.latency.backgroundErrors} failed)`
              : ', idle service'),
          `p50 ${ms(webhooks.latency.fromOccurredAt.p50Ms)}, p99 ${ms(webhooks.latency.fromOccurredAt.p99Ms)}, ` +
            `max ${ms(webhooks.latency.fromOccurredAt.maxMs)}`,
        ],
        [
          '201 response read by the client → arrival (same creations)',
          `p50 ${ms(webhooks.latency.fromResponse.p50Ms)}, p99 ${ms(webhooks.latency.fromResponse.p99Ms)}, ` +
            `min ${ms(webhooks.latency.fromResponse.minMs)}`,
        ],
      ],
    ),
    table(
      [
        `CV, built-in models (${cv.image.width} × ${cv.image.height} JPEG of ${int(cv.image.bytes)} bytes, CV_CONCURRENCY ${cv.concurrency})`,
        'Figure',
      ],
      [
        ...cv.throughput.map((t, i) => [
          `\`${t.model}\`, ${int(t.jobs)} jobs submitted back to back`,
          `${dec(t.jobsPerSecond, 1)} jobs/s (${dec(t.seconds, 1)} s; one run ${ms(t.meanRunMs)} on average; ` +
            `${t.failed} failed; ${dec(cv.overhead[i]!.ratio, 2)} of the plain loop)`,
        ]),
        ...cv.loop.map((l) => [
          `\`${l.model}\`'s \`run\` in a plain loop, ${int(l.runs)} runs one at a time (baseline)`,
          `${dec(l.runsPerSecond, 1)} runs/s (${dec(l.seconds, 1)} s)`,
        ]),
        [
          `Requested → started, ${cv.startLatency.samples} jobs one at a time on an idle service`,
          `p50 ${ms(cv.startLatency.p50Ms)}, p99 ${ms(cv.startLatency.p99Ms)}, max ${ms(cv.startLatency.maxMs)}`,
        ],
      ],
    ),
    table(
      [
        `Rebuild and audit (${int(rebuild.events)} events, ${rebuild.eventsPerStream} per stream, one tenant)`,
        'Figure',
      ],
      [
        ['Seed, 500 appends in flight', `${dec(rebuild.seedSeconds, 1)} s`],
        [
          'Raw `readAll` with the projection’s filter, pages of 1000 (baseline)',
          `${int(rebuild.rawReadEventsPerSecond)} events/s`,
        ],
        [
          'Blue/green rebuild of the observations read model',
          `${int(rebuild.rebuildEventsPerSecond)} events/s, ${dec(rebuild.rebuildSeconds, 1)} s ` +
            `(${dec(rebuild.ratio, 2)} of raw)`,
        ],
        ['Rebuild peak RSS (child process)', `${dec(rebuild.peakRssMb, 0)} MB`],
        [
          'Raw `readAll` of the tenant, raw events, pages of 1000 (what verify reads)',
          `${int(rebuild.audit.rawReadEventsPerSecond)} events/s`,
        ],
        [
          '`audit verify` (`verifyTenant`)',
          `${int(rebuild.audit.verifyEventsPerSecond)} events/s, ${dec(rebuild.audit.verifySeconds, 1)} s ` +
            `(${dec(rebuild.audit.ratio, 2)} of raw; ${int(rebuild.audit.streams)} streams; ` +
            `${rebuild.audit.intact ? 'intact' : '**broken**'}; peak RSS ${dec(rebuild.audit.peakRssMb, 0)} MB)`,
        ],
      ],
    ),
    ...(r.postgres ? [postgresMarkdown(r.postgres)] : []),
    table(
      ['Target', 'Measured', 'Target', 'Result'],
      r.checks.map((c) => [
        c.name,
        `${dec(c.value, c.unit ? 1 : 2)}${c.unit}`,
        `${c.op} ${c.target}${c.unit}`,
        c.pass ? 'pass' : '**miss**',
      ]),
    ),
    missed.length === 0
      ? 'Every target was met in this run.'
      : `Missed in this run: ${missed.map((c) => `${c.name} (${dec(c.value, c.unit ? 1 : 2)}${c.unit}, target ${c.op} ${c.target}${c.unit})`).join('; ')}.`,
  ].join('\n\n');
};

const start = '<!-- bench:results:start -->';
const end = '<!-- bench:results:end -->';

/** Writes latest.json and replaces the generated section of docs/benchmarks.md, formatted as prettier would. */
export const writeReports = async (r: Results): Promise<string[]> => {
  const jsonFile = join(projectRoot, 'docs', 'bench', 'latest.json');
  mkdirSync(join(projectRoot, 'docs', 'bench'), { recursive: true });
  writeFileSync(jsonFile, `${JSON.stringify(r, null, 2)}\n`);

  const mdFile = await replaceBetweenMarkers(start, end, renderMarkdown(r));
  return mdFile ? [jsonFile, mdFile] : [jsonFile];
};

/**
 * Puts `markdown` between the two markers of docs/benchmarks.md, formatted as the rest of the docs; returns
 * the file written, or null when the markers are missing.
 */
export const replaceBetweenMarkers = async (
  startMarker: string,
  endMarker: string,
  markdown: string,
): Promise<string | null> => {
  const mdFile = join(projectRoot, 'docs', 'benchmarks.md');
  const doc = readFileSync(mdFile, 'utf8');
  const from = doc.indexOf(startMarker);
  const to = doc.indexOf(endMarker);
  if (from < 0 || to < from) return null;
  const next = `${doc.slice(0, from + startMarker.length)}\n\n${markdown}\n\n${doc.slice(to)}`;
  const options = (await prettier.resolveConfig(mdFile)) ?? {};
  writeFileSync(mdFile, await prettier.format(next, { ...options, filepath: mdFile }));
  return mdFile;
};

/** The stdout summary: fixed-width columns. */
export const renderText = (rows: string[][]): string => {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length)));
  return rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ')).join('\n');
};

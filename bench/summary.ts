import type { HttpResults } from './http.js';
import type { MillionResults } from './million.js';
import { check, renderText, type Check } from './report.js';
import type { AppendResults, CatchUpResults } from './store.js';

/** The targets each phase is held to, and the summary printed to stdout. Phases not run are null. */

export interface Parts {
  http: HttpResults | null;
  append: AppendResults | null;
  catchUp: CatchUpResults | null;
  million: MillionResults | null;
}

export const targetChecks = ({ http, catchUp, million }: Parts): Check[] => {
  return [
    ...(http
      ? [
          check(
            'create req/s ÷ echo req/s',
            http.create.requestsPerSecond / http.echo.requestsPerSecond,
            '>=',
            0.35,
          ),
          check(
            'list req/s ÷ echo req/s',
            http.list.requestsPerSecond / http.echo.requestsPerSecond,
            '>=',
            0.4,
          ),
          check('create p99', http.create.p99Ms, '<', 25, ' ms'),
          check(
            'HTTP errors + timeouts + non-2xx (sanity)',
            [http.echo, http.create, http.list].reduce((n, f) => n + f.errors + f.timeouts + f.non2xx, 0),
            '=',
            0,
          ),
        ]
      : []),
    ...(catchUp
      ? [
          check(
            'projection ÷ raw read',
            catchUp.projectionEventsPerSecond / catchUp.rawReadEventsPerSecond,
            '>=',
            0.5,
          ),
        ]
      : []),
    ...(million
      ? [
          check(
            `catch-up peak RSS over ${million.events.toLocaleString('en-US')} events`,
            million.peakRssMb,
            '<',
            300,
            ' MB',
          ),
        ]
      : []),
  ];
};

export const summary = ({ http, append, catchUp, million }: Parts, checks: readonly Check[]): string => {
  const text: string[][] = [['figure', 'value']];
  const row = (name: string, value: string) => text.push([name, value]);
  const f0 = (n: number) => Math.round(n).toLocaleString('en-US');
  if (http) {
    row(
      'HTTP load as',
      http.authenticated ? `API key of tenant ${http.tenantId}` : `open tenant ${http.tenantId}`,
    );
    for (const [name, f] of [
      ['POST /echo', http.echo],
      ['POST observations', http.create],
      ['GET observations', http.list],
    ] as const) {
      row(
        name,
        `${f0(f.requestsPerSecond)} req/s  p50 ${f.p50Ms.toFixed(1)} ms  p99 ${f.p99Ms.toFixed(1)} ms  max ${f.maxMs.toFixed(0)} ms  ` +
          `errors ${f.errors}  timeouts ${f.timeouts}  non-2xx ${f.non2xx}`,
      );
    }
  }
  if (append) {
    row('append 1/call', `${f0(append.unbatchedEventsPerSecond)} events/s`);
    row(
      `append ${append.batchSize}/call`,
      `${f0(append.batchedEventsPerSecond)} events/s  (× ${(append.batchedEventsPerSecond / append.unbatchedEventsPerSecond).toFixed(1)})`,
    );
  }
  if (catchUp) {
    row(`seed ${f0(catchUp.events)}`, `${catchUp.seedSeconds.toFixed(1)} s`);
    row(
      'raw readAll',
      `${f0(catchUp.rawReadEventsPerSecond)} events/s  (filtered ${f0(catchUp.rawReadFilteredEventsPerSecond)})`,
    );
    row('projection catch-up', `${f0(catchUp.projectionEventsPerSecond)} events/s`);
  }
  if (million) {
    row(
      `seed ${f0(million.events)}`,
      `${million.seedSeconds.toFixed(1)} s  (${f0(million.seedEventsPerSecond)} events/s)`,
    );
    row(
      `catch-up ${f0(million.events)}`,
      `${f0(million.catchUpEventsPerSecond)} events/s  ${million.catchUpSeconds.toFixed(1)} s`,
    );
    row(
      'catch-up RSS',
      `peak ${million.peakRssMb.toFixed(0)} MB  (sampled ${million.peakRssSampledMb.toFixed(0)} by ${million.samples} timer samples, ` +
        `maxRSS ${million.maxRssMb.toFixed(0)}, /proc ${million.parentSampledRssMb?.toFixed(0) ?? 'n/a'}, start ${million.startRssMb.toFixed(0)})`,
    );
  }
  text.push(['', '']);
  for (const c of checks) {
    text.push([
      c.name,
      `${c.value.toFixed(c.unit ? 1 : 2)}${c.unit}  target ${c.op} ${c.target}${c.unit}  ${c.pass ? 'PASS' : 'MISS'}`,
    ]);
  }
  return renderText(text);
};

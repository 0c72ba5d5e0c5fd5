import type { RebuildPhaseResults } from './audit.js';
import type { HttpResults } from './http.js';
import type { PgAppendMode, PgAppendResults, PgCatchUpResults } from './postgres.js';
import { check, dec, int, ms, renderText, scaleoutTable, table, type Check } from './report.js';
import type { ScaleoutResults } from './scaleout.js';
import { summary, targetChecks } from './summary.js';
import type { WebhookResults } from './webhooks.js';

/** The PostgreSQL side of a run: its targets, its stdout summary and its part of docs/benchmarks.md. */

export interface PostgresResults {
  http: HttpResults | null;
  scaleout: ScaleoutResults | null;
  append: PgAppendResults | null;
  catchUp: PgCatchUpResults | null;
  webhooks: WebhookResults | null;
  rebuild: RebuildPhaseResults | null;
}

const label = 'PostgreSQL: ';

const mode = (m: PgAppendMode) =>
  `${m.batchSize} event${m.batchSize === 1 ? '' : 's'} per call, ${m.inFlight} call${m.inFlight === 1 ? '' : 's'} at once`;

/** The phases' targets as on SQLite, then the store's own against raw SQL. */
export const postgresChecks = (pg: PostgresResults): Check[] => [
  ...targetChecks(
    { ...pg, append: null, million: null, growth: null, auth: null, cv: null },
    { rebuild: 0.5 },
  ).map((c) => ({
    ...c,
    name: `${label}${c.name}`,
  })),
  ...(pg.append?.modes ?? []).map((m) =>
    check(`${label}append ÷ raw INSERT, ${mode(m)}`, m.ratio, '>=', 0.7),
  ),
  ...(pg.catchUp
    ? [check(`${label}catch-up subscription ÷ raw SELECT`, pg.catchUp.subscriptionPerRawSelect, '>=', 0.5)]
    : []),
];

const f0 = (n: number) => Math.round(n).toLocaleString('en-US');

/** The stdout figures, as summary() prints SQLite's, and the rows of the two raw-SQL comparisons. */
export const postgresSummary = (pg: PostgresResults): string => {
  const shared = summary({ ...pg, append: null, million: null, growth: null, auth: null, cv: null }, []);
  const rows: string[][] = [['PostgreSQL store vs raw SQL', 'value']];
  for (const m of pg.append?.modes ?? [])
    rows.push([
      `append ${m.batchSize}/call ×${m.inFlight}`,
      `${f0(m.storeEventsPerSecond)} events/s  raw INSERT ${f0(m.rawInsertEventsPerSecond)}  (${m.ratio.toFixed(2)})` +
        `  into the events' indexes ${f0(m.rawIndexedEventsPerSecond)}  (${(m.storeEventsPerSecond / m.rawIndexedEventsPerSecond).toFixed(2)})`,
    ]);
  if (pg.catchUp)
    rows.push([
      `catch-up ${f0(pg.catchUp.events)}, pages of ${pg.catchUp.pageSize}`,
      `subscription ${f0(pg.catchUp.subscriptionEventsPerSecond)} events/s  raw SELECT ` +
        `${f0(pg.catchUp.rawSelectEventsPerSecond)}  (${pg.catchUp.subscriptionPerRawSelect.toFixed(2)})`,
    ]);
  return `PostgreSQL\n${shared}\n${rows.length > 1 ? renderText(rows) : ''}`;
};

/** The PostgreSQL section of the generated results: one table per phase that ran. */
export const postgresMarkdown = (pg: PostgresResults): string => {
  const parts: string[] = ['### PostgreSQL'];
  const { http, scaleout, append, catchUp, webhooks, rebuild } = pg;
  if (http) {
    const row = (name: string, f: HttpResults['create'], peer: HttpResults['create']) => [
      name,
      int(f.requestsPerSecond),
      `${dec(f.requestsPerSecond / peer.requestsPerSecond, 2)} (${dec(f.requestsPerSecond / http.echo.requestsPerSecond, 2)})`,
      f.cpuMsPerRequest === null || f.cpuMsPerRequest === undefined ? '—' : dec(f.cpuMsPerRequest, 3),
      ms(f.p50Ms),
      ms(f.p99Ms),
      ms(f.maxMs),
      `${f.errors} / ${f.timeouts} / ${f.non2xx}`,
    ];
    parts.push(
      table(
        [
          'HTTP, the service on PostgreSQL',
          'req/s',
          'vs CRUD peer (vs echo), the SQLite run’s',
          'node CPU ms/req (PostgreSQL’s not counted)',
          'p50',
          'p99',
          'max',
          'errors / timeouts / non-2xx',
        ],
        [
          row('`POST …/observations`', http.create, http.peerCreate),
          row(
            `\`GET …/observations?limit=50\` (${int(http.observationsBeforeList)} stored)`,
            http.list,
            http.peerList,
          ),
        ],
      ),
    );
  }
  if (scaleout)
    parts.push(
      scaleoutTable(
        scaleout,
        'Scale-out on PostgreSQL: `ROLE=api` processes + one `ROLE=worker` on one database, each its own `DATA_DIR`',
      ),
    );
  const store: string[][] = [];
  for (const m of append?.modes ?? [])
    store.push([
      `Append, ${mode(m)} (${int(m.events)} events)`,
      `${int(m.storeEventsPerSecond)} events/s; raw \`INSERT\` of the same rows ${int(m.rawInsertEventsPerSecond)} (${dec(m.ratio, 2)}); ` +
        `into a copy of \`events\` with its indexes ${int(m.rawIndexedEventsPerSecond)} (${dec(m.storeEventsPerSecond / m.rawIndexedEventsPerSecond, 2)})`,
    ]);
  if (catchUp)
    store.push(
      [
        `Seed ${int(catchUp.events)} events, ${catchUp.eventsPerStream} per stream, 500 appends in flight`,
        `${dec(catchUp.seedSeconds, 1)} s`,
      ],
      [
        `Catch-up subscription from 0, pages of ${catchUp.pageSize}`,
        `${int(catchUp.subscriptionEventsPerSecond)} events/s; raw \`SELECT\` of the same rows ` +
          `${int(catchUp.rawSelectEventsPerSecond)} (${dec(catchUp.subscriptionPerRawSelect, 2)})`,
      ],
      [
        'Raw `readAll`, pages of 500 (with the projection’s type filter)',
        `${int(catchUp.rawReadEventsPerSecond)} events/s (${int(catchUp.rawReadFilteredEventsPerSecond)})`,
      ],
      [
        'Projection runner catch-up, read models in the same database',
        `${int(catchUp.projectionEventsPerSecond)} events/s ` +
          `(${dec(catchUp.projectionEventsPerSecond / catchUp.rawReadFilteredEventsPerSecond, 2)} of filtered raw)`,
      ],
    );
  if (store.length > 0) parts.push(table(['PostgreSQL event store', 'Figure'], store));
  if (webhooks)
    parts.push(
      table(
        ['Webhooks on PostgreSQL', 'Figure'],
        [
          [
            `Service deliveries of a ${int(webhooks.deliveries)}-event backlog, ${webhooks.concurrency} per subscription`,
            `${int(webhooks.serviceDeliveriesPerSecond)} deliveries/s; raw POSTs ${int(webhooks.rawPostsPerSecond)} ` +
              `(${dec(webhooks.ratio, 2)}); ${webhooks.duplicates} duplicates`,
          ],
          [
            `Event \`occurredAt\` → arrival, ${webhooks.latency.samples} creations`,
            `p50 ${ms(webhooks.latency.fromOccurredAt.p50Ms)}, p99 ${ms(webhooks.latency.fromOccurredAt.p99Ms)}`,
          ],
        ],
      ),
    );
  if (rebuild)
    parts.push(
      table(
        [`Rebuild and audit on PostgreSQL (${int(rebuild.events)} events, one database)`, 'Figure'],
        [
          ['Seed, 500 appends in flight', `${dec(rebuild.seedSeconds, 1)} s`],
          [
            'Blue/green rebuild of the observations read model',
            `${int(rebuild.rebuildEventsPerSecond)} events/s; raw filtered \`readAll\` ${int(rebuild.rawReadEventsPerSecond)} ` +
              `(${dec(rebuild.ratio, 2)}); peak RSS ${dec(rebuild.peakRssMb, 0)} MB`,
          ],
          [
            '`audit verify`',
            `${int(rebuild.audit.verifyEventsPerSecond)} events/s; raw read ${int(rebuild.audit.rawReadEventsPerSecond)} ` +
              `(${dec(rebuild.audit.ratio, 2)}); ${rebuild.audit.intact ? 'intact' : '**broken**'}; ` +
              `peak RSS ${dec(rebuild.audit.peakRssMb, 0)} MB`,
          ],
        ],
      ),
    );
  return parts.join('\n\n');
};

import { pathToFileURL } from 'node:url';
import { verifyTenant } from '../src/audit/verify.js';
import type { EventStore } from '../src/eventstore/port.js';
import { benchTenant } from './events.js';
import { startChild, waitExit } from './processes.js';
import { rebuildBench, type RebuildResults } from './rebuild.js';
import { openEventStoreAt } from './targets.js';

/**
 * `audit verify` (src/audit/verify.ts's verifyTenant) over an already seeded events file, in a child
 * process of its own: events/s, and beside it the raw read verify does (readAll of the tenant, raw, pages
 * of 1000) timed alone, after one unmeasured pass that warms the page cache. The `rebuild` phase runs it
 * on the events it rebuilt from, all in one tenant. Targets: ≥ 0.5 of the raw read, and ≤ 300 MB peak RSS
 * however many streams (BENCH_PER_STREAM=1 seeds a million events as a million streams). The events are a
 * SQLite file or a PostgreSQL database (its URL), as the rebuild's were.
 *
 *   node --import tsx bench/audit.ts --child <events.db | postgres url> [tenant]
 */

export interface AuditVerifyResults {
  events: number;
  streams: number;
  rawReadEventsPerSecond: number;
  verifyEventsPerSecond: number;
  verifySeconds: number;
  /** verify events/s ÷ raw read events/s (target ≥ 0.5). */
  ratio: number;
  peakRssMb: number;
  /** Whether verify found the history intact, as it must be. */
  intact: boolean;
}

const timedRawRead = async (store: EventStore, tenantId: string) => {
  const started = performance.now();
  let count = 0;
  for (let after = 0; ;) {
    const page = await store.readAll({ after, maxCount: 1000, filter: { tenantId }, raw: true });
    count += page.events.length;
    after = page.lastPosition;
    if (page.isEnd) break;
  }
  return { count, eventsPerSecond: count / ((performance.now() - started) / 1000) };
};

const child = async (eventsTarget: string, tenantId: string): Promise<AuditVerifyResults> => {
  const store = await openEventStoreAt(eventsTarget);
  try {
    await timedRawRead(store, tenantId);
    const raw = await timedRawRead(store, tenantId);
    const started = performance.now();
    const report = await verifyTenant(store, tenantId);
    const verifySeconds = (performance.now() - started) / 1000;
    if (report.events !== raw.count)
      throw new Error(`verify saw ${report.events} of the ${raw.count} events the raw read saw`);
    const verifyEventsPerSecond = report.events / verifySeconds;
    return {
      events: report.events,
      streams: report.streams,
      rawReadEventsPerSecond: raw.eventsPerSecond,
      verifyEventsPerSecond,
      verifySeconds,
      ratio: verifyEventsPerSecond / raw.eventsPerSecond,
      // The kernel's high-water mark: the verify's own, since the raw reads hold nothing.
      peakRssMb: process.resourceUsage().maxRSS / 1024,
      intact: report.broken === null,
    };
  } finally {
    await store.close();
  }
};

export const auditVerifyBench = async (eventsTarget: string, tenantId = benchTenant) => {
  const measured = startChild('bench/audit.ts', { args: ['--child', eventsTarget, tenantId] });
  const code = await waitExit(measured, 30 * 60_000);
  const line = /BENCH_RESULT (.*)/.exec(measured.output())?.[1];
  if (code !== 0 || !line) throw new Error(`audit verify child failed (${code}):\n${measured.output()}`);
  return JSON.parse(line) as AuditVerifyResults;
};

export type RebuildPhaseResults = RebuildResults & { audit: AuditVerifyResults };

/**
 * The `rebuild` phase: bench/rebuild.ts's rebuild of N events, then audit verify over the same events; on
 * SQLite files, or in the PostgreSQL database `databaseUrl` names.
 */
export const rebuildPhase = async (
  events: number,
  perStream: number,
  databaseUrl?: string,
): Promise<RebuildPhaseResults> => {
  const verified: AuditVerifyResults[] = [];
  const rebuild = await rebuildBench(
    events,
    perStream,
    async (eventsTarget) => {
      verified.push(await auditVerifyBench(eventsTarget));
    },
    databaseUrl,
  );
  return { ...rebuild, audit: verified[0]! };
};

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [flag, eventsTarget, tenantId] = process.argv.slice(2);
  if (flag !== '--child' || !eventsTarget)
    throw new Error('usage: audit.ts --child <events.db | postgres url> [tenant]');
  const result = await child(eventsTarget, tenantId ?? benchTenant);
  console.log(`BENCH_RESULT ${JSON.stringify(result)}`);
}

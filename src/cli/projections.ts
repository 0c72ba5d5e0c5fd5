import { projections } from '../domains.js';
import { buildCheckpoint, listBuilds, projectionStatus, rebuild, untilText } from '../readmodels/rebuild.js';
import { progressReporter } from '../readmodels/progress.js';
import {
  batchSizeOption,
  flags,
  knownProjection,
  projectionNames,
  replayOptions,
  requireTenant,
} from './args.js';
import { ExitError, interruptible, UsageError, type Commands } from './command.js';
import { table } from './output.js';
import { assertTenantExists, withStores } from './stores.js';

/** The live read models: rebuild them blue/green, and show where each one is. */
export const projectionCommands: Commands = {
  'projections rebuild': {
    help: `projections rebuild [name ...] [--tenant <id>] [--batch-size <n>] [--restart]
  Rebuilds read models from the events into fresh collections and swaps each in atomically once it has
  caught up (blue/green): the service keeps serving the old one until then. Without names, every read model.
  With --tenant, only that tenant's documents are rebuilt and replaced. Ctrl-C stops it (exit code 130)
  leaving the live read model untouched; the same command resumes where it stopped (--restart starts over).
  Known names: ${projectionNames()}`,
    run: async (args, { print, ...context }) => {
      const { values, positionals } = flags(args, {
        allowPositionals: true,
        options: {
          tenant: { type: 'string' },
          'batch-size': { type: 'string' },
          restart: { type: 'boolean' },
        },
      });
      const tenantId = values.tenant === undefined ? undefined : requireTenant(values.tenant);
      let chosen = positionals.length > 0 ? positionals.map(knownProjection) : [...projections];
      if (tenantId) {
        const platform = chosen.filter((entry) => entry.partition === 'platform');
        if (positionals.length > 0 && platform.length > 0) {
          throw new UsageError(
            `--tenant: ${platform.map((e) => e.projection.name).join(', ')} keep every tenant in one partition; rebuild them whole`,
          );
        }
        chosen = chosen.filter((entry) => entry.partition === 'tenant');
      }
      const batchSize = batchSizeOption(values['batch-size']);
      await withStores(context, async (stores) => {
        if (tenantId) await assertTenantExists(stores.eventStore, tenantId);
        const results = await interruptible(async (signal) => {
          const outcomes = [];
          for (const { projection } of chosen) {
            const reporter = progressReporter(process.stderr);
            const outcome = await rebuild(
              projection,
              stores,
              replayOptions(signal, reporter.update, { restart: values.restart, tenantId, batchSize }),
            );
            reporter.finish();
            outcomes.push({ projection: projection.name, ...outcome });
            if (outcome.status === 'interrupted') break;
          }
          return outcomes;
        });
        const interrupted = results.find((r) => r.status === 'interrupted');
        print(
          results
            .map((r) =>
              r.status === 'interrupted'
                ? `${r.projection}: interrupted at position ${r.checkpoint}; the live read model is untouched. Run the same command again to resume.`
                : `${r.projection}: rebuilt${tenantId ? ` for ${tenantId}` : ''} up to position ${r.checkpoint} (${r.events} events${r.resumedFrom > 0 ? `, resumed from ${r.resumedFrom}` : ''}${r.parked > 0 ? `, ${r.parked} parked` : ''}) and swapped in`,
            )
            .join('\n'),
          results.map(
            ({ projection, status, checkpoint, events, parked, resumedFrom, elapsedMs, build }) => ({
              projection,
              status,
              checkpoint,
              events,
              parked,
              resumedFrom,
              elapsedMs,
              collection: build.id,
            }),
          ),
        );
        if (interrupted) throw new ExitError(130);
      });
    },
  },
  'projections status': {
    help: `projections status
  Shows each read model's checkpoint, its lag (events not applied yet, and seconds since the first of them),
  its runner's last error and how many events it parked, then the parked events, the rebuilds in progress
  and the snapshots.`,
    run: async (args, { print, ...context }) => {
      flags(args, { options: {} });
      await withStores(context, async (stores) => {
        const now = new Date();
        const head = await stores.eventStore.headPosition();
        const statuses = [];
        for (const { projection } of projections) {
          statuses.push(await projectionStatus(projection, stores, { now }));
        }
        const builds = [];
        for (const build of await listBuilds(stores.readModels)) {
          if (build.status === 'building') {
            builds.push({
              ...build,
              checkpoint: await stores.readModels.getCheckpoint(buildCheckpoint(build)),
            });
          } else if (build.kind === 'snapshot' && build.status === 'complete') builds.push(build);
        }
        const parked = await stores.readModels.listParked();
        const rows = statuses.map((s) => [
          s.projection,
          String(s.checkpoint),
          `${s.lagEventsAtLeast ? '>=' : ''}${s.lagEvents}`,
          String(s.lagSeconds),
          String(s.parked),
          s.lastError ? `${s.lastError.at} ${s.lastError.message}` : '-',
        ]);
        const text = [
          `Head position: ${head}`,
          table([['projection', 'checkpoint', 'lag (events)', 'lag (s)', 'parked', 'last error'], ...rows]),
          ...(parked.length > 0 ? ['', 'Parked events ("projections parked retry|skip <name>"):'] : []),
          ...parked.map(
            (p) =>
              `  ${p.projection} position ${p.position}  ${p.tenantId}  ${p.eventType} ${p.eventId}  parked ${p.parkedAt}: ${p.error}`,
          ),
          ...(builds.length > 0 ? ['', 'Builds:'] : []),
          ...builds.map((b) =>
            b.kind === 'snapshot'
              ? `  snapshot ${b.snapshot} of ${b.projection} until ${untilText(b.until)}: ${b.status} at position ${b.checkpoint}`
              : `  rebuild of ${b.projection}${b.tenantId ? ` for ${b.tenantId}` : ''}: interrupted at position ${b.checkpoint}; "projections rebuild ${b.projection}" resumes it`,
          ),
        ].join('\n');
        print(text, { head, projections: statuses, parked, builds });
      });
    },
  },
};

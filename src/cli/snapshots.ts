import { findProjection } from '../domains.js';
import { parseUntil, UntilError } from '../audit/replay.js';
import { buildSnapshot, dropSnapshot, untilText } from '../readmodels/rebuild.js';
import { progressReporter } from '../readmodels/progress.js';
import {
  batchSizeOption,
  exportNames,
  flags,
  knownProjection,
  projectionNames,
  replayOptions,
  requireTenant,
} from './args.js';
import { ExitError, inputErrorsAsUsage, interruptible, UsageError, type Commands } from './command.js';
import { withStores } from './stores.js';

/** Snapshots: a read model as it was at a past moment, built beside the live one and never swapped in. */
export const snapshotCommands: Commands = {
  'projections build': {
    help: `projections build <name> --until <ISO time|position> --into <snapshot> [--tenant <id>] [--restart]
  Builds the read model as it was at that moment into a new collection beside the live one, never swapped
  in; "export <name> --from <snapshot>" reads it, so only read models with an export have snapshots. It
  reports the position it stopped at: the last one up to --until. An interrupted build resumes when run again.`,
    run: async (args, { print, ...context }) => {
      const { values, positionals } = flags(args, {
        allowPositionals: true,
        options: {
          until: { type: 'string' },
          into: { type: 'string' },
          tenant: { type: 'string' },
          'batch-size': { type: 'string' },
          restart: { type: 'boolean' },
        },
      });
      if (positionals.length !== 1)
        throw new UsageError(`projections build needs one name: ${projectionNames()}`);
      const { projection, export: spec } = knownProjection(positionals[0]!);
      // A snapshot is read only by export: one of a read model that has none could never be read.
      if (!spec) {
        throw new UsageError(
          `${projection.name} has no export, so a snapshot of it could not be read; snapshots are of: ${exportNames()}`,
        );
      }
      if (!values.until) throw new UsageError('--until <ISO time|position> is required');
      if (!values.into) throw new UsageError('--into <snapshot name> is required');
      const until = parseUntil(values.until, new Date());
      const tenantId = values.tenant === undefined ? undefined : requireTenant(values.tenant);
      const batchSize = batchSizeOption(values['batch-size']);
      const into = values.into;
      await withStores(context, async (stores) => {
        const head = await stores.eventStore.headPosition();
        if ('position' in until && until.position > head) {
          throw new UntilError(`--until ${until.position} is past the newest event (position ${head})`);
        }
        const outcome = await interruptible(async (signal) => {
          const reporter = progressReporter(process.stderr);
          const result = await inputErrorsAsUsage(() =>
            buildSnapshot(projection, stores, {
              into,
              until,
              ...replayOptions(signal, reporter.update, { restart: values.restart, tenantId, batchSize }),
            }),
          );
          reporter.finish();
          return result;
        });
        print(
          outcome.status === 'interrupted'
            ? `${into}: interrupted at position ${outcome.checkpoint}; run the same command again to resume`
            : `Snapshot ${into} of ${projection.name} as of ${untilText(until)}: stopped at position ${outcome.checkpoint}, ${outcome.events} events applied. Read it with: obs export ${spec.name} --from ${into} --format ndjson`,
          {
            snapshot: into,
            projection: projection.name,
            status: outcome.status,
            until,
            checkpoint: outcome.checkpoint,
            events: outcome.events,
            collection: outcome.build.id,
          },
        );
        if (outcome.status === 'interrupted') throw new ExitError(130);
      });
    },
  },
  'projections drop': {
    help: 'projections drop <snapshot>\n  Removes a snapshot made with "projections build".',
    run: async (args, { print, ...context }) => {
      const { positionals } = flags(args, { allowPositionals: true, options: {} });
      if (positionals.length !== 1) throw new UsageError('projections drop needs one snapshot name');
      const name = positionals[0]!;
      await withStores(context, async (stores) => {
        await inputErrorsAsUsage(() =>
          dropSnapshot(stores, name, (p) => findProjection(p)?.projection.collection),
        );
        print(`Dropped snapshot ${name}`, { snapshot: name, dropped: true });
      });
    },
  },
};

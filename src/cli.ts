import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { tenantsProjection } from '../projections/tenants.js';
import { readKeys, retireKey, rotateKeys } from './auth/signing-keys.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { newId, tenantIdPattern } from './core/ids.js';
import { ConflictError, NotFoundError, ValidationError } from './core/errors.js';
import { CreateTenantBody } from './credentials/codecs.js';
import { decodeOrThrow } from './http/codec.js';
import { platformPartition } from './readmodels/aggregate-projection.js';
import { openStores, type Stores } from './stores.js';
import { recordDigest } from './audit/digest.js';
import { history, parseUntil, stateAt, UntilError } from './audit/replay.js';
import { verifyTenant } from './audit/verify.js';
import { withoutSecrets } from './history/redaction.js';
import { streamHeadsProjection } from '../projections/stream-heads.js';
import { readAggregate } from './core/command-handler.js';
import type { EventStore } from './eventstore/port.js';
import { tenantDecider } from './tenants/tenant.js';
import { tenantStream } from './tenants/load.js';
import { projectionRunner } from './readmodels/runner.js';
import { findExport, findProjection, projections, type RegisteredProjection } from '../projections/index.js';
import { exportReadModel } from './readmodels/export.js';
import { progressReporter } from './readmodels/progress.js';
import { findParked, retryParked, skipParked } from './readmodels/parked-commands.js';
import {
  BuildInputError,
  buildCheckpoint,
  buildSnapshot,
  dropSnapshot,
  findSnapshot,
  listBuilds,
  projectionStatus,
  rebuild,
  untilText,
} from './readmodels/rebuild.js';
import { pino } from 'pino';
import { createTenant } from './tenants/create.js';
import type { Tenant } from './tenants/tenant.js';

/**
 * The operator's command line: the same stores and the same commands as the API, offline.
 * Exit codes: 0 done, 1 failed, 2 bad usage or input, 130 interrupted (Ctrl-C during a rebuild or build).
 */
const usage = `Usage: obs <command> [options]

Commands:
  tenant create --name <name> --email <address>   create a tenant; prints its first admin API key, once
  tenant list                                     list tenants
  keys list                                       list the token signing keys
  keys rotate                                     add a signing key; it signs new tokens from now on
  keys retire <kid>                               stop accepting tokens signed with this key
  audit verify --tenant <id>                      check every hash chain and digest of the tenant's history
  audit replay --tenant <id> [--stream <name>] [--until <time|position>]
                                                  print the history, or an aggregate's state at that point
  audit digest --tenant <id>                      record a digest of the stream heads now
  projections rebuild [name ...] [--tenant <id>]  rebuild read models beside the live ones, then swap them in
  projections status                              checkpoints, lag, last errors and parked events of the read models
  projections parked retry <name> [--position <n>]
                                                  apply parked events again; those that now apply leave the list
  projections parked skip <name> --position <n>   drop a parked event on purpose
  projections build <name> --until <time|position> --into <snapshot>
                                                  build a read model as of then, beside the live one
  projections drop <snapshot>                     remove a snapshot
  export <name> --format ndjson|csv [--tenant <id>] [--from <snapshot>]
                                                  stream a read model (or a snapshot) to stdout

Options:
  --json     print JSON instead of text
  --help     show help for a command

The stores are the ones the service is configured for (DATA_DIR, EVENTSTORE_URL, MONGODB_URL).`;

class UsageError extends Error {}

/** A command's own verdict, such as a verification that found a broken link: exit with this code. */
class ExitError extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

const requireTenant = (tenant: string | undefined): string => {
  if (!tenant || !tenantIdPattern.test(tenant))
    throw new UsageError('--tenant <id> is required, e.g. --tenant t_01m7…');
  return tenant;
};

const withStores = async <T>(config: Config, work: (stores: Stores) => Promise<T>): Promise<T> => {
  const stores = await openStores(config);
  try {
    return await work(stores);
  } finally {
    await stores.close();
  }
};

const assertTenantExists = async (eventStore: EventStore, tenantId: string) => {
  const { state } = await readAggregate(eventStore, tenantDecider, tenantStream(tenantId));
  if (state.status === 'absent') throw new UsageError(`Tenant ${tenantId} does not exist`);
};

/** Progress on a terminal's stderr, rewritten in place; nothing when stderr is a file or a pipe. */
const progressLine = (what: string) => {
  const started = Date.now();
  const tty = process.stderr.isTTY;
  return {
    update: (count: number) => {
      if (!tty) return;
      const rate = Math.round(count / Math.max((Date.now() - started) / 1000, 0.001));
      process.stderr.write(`\r${what} ${count} events (${rate}/s)`);
    },
    done: () => {
      if (tty) process.stderr.write('\n');
    },
  };
};

/** Validation errors name body fields; on the command line they should name the flags. */
const withFlagNames = <T>(flags: Record<string, string>, decode: () => T): T => {
  try {
    return decode();
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new ValidationError(error.errors.map((e) => ({ ...e, path: flags[e.path] ?? e.path })));
  }
};

const projectionNames = () => projections.map((entry) => entry.projection.name).join(', ');
const exportNames = () => projections.flatMap((entry) => entry.export?.name ?? []).join(', ');

const knownProjection = (name: string): RegisteredProjection => {
  const found = findProjection(name);
  if (!found) throw new UsageError(`Unknown projection ${name}; known: ${projectionNames()}`);
  return found;
};

const batchSizeOption = (text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  if (!/^[1-9]\d{0,5}$/.test(text)) throw new UsageError('--batch-size must be a whole number from 1');
  return Number(text);
};

/** Rebuild and snapshot inputs the operator can fix: exit code 2. */
const inputErrorsAsUsage = async <T>(work: () => Promise<T>): Promise<T> => {
  try {
    return await work();
  } catch (error) {
    if (error instanceof BuildInputError) throw new UsageError(error.message);
    throw error;
  }
};

/**
 * Runs long work that Ctrl-C stops cleanly: the first SIGINT aborts the signal (the work stops after the
 * batch in flight), a second one exits at once.
 */
const interruptible = async <T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> => {
  const controller = new AbortController();
  const onSignal = () => {
    if (controller.signal.aborted) process.exit(130);
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  try {
    return await work(controller.signal);
  } finally {
    process.off('SIGINT', onSignal);
  }
};

const table = (rows: string[][]): string => {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows
    .map((row) =>
      row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  '),
    )
    .join('\n');
};

/** `<name> [--position <n>]` of the parked commands. */
const parkedArgs = (args: string[], positionRequired: boolean) => {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { position: { type: 'string' } },
  });
  if (positionals.length !== 1) throw new UsageError(`Name one projection: ${projectionNames()}`);
  const { projection } = knownProjection(positionals[0]!);
  if (values.position === undefined && positionRequired) throw new UsageError('--position <n> is required');
  if (values.position !== undefined && !/^[1-9]\d{0,15}$/.test(values.position)) {
    throw new UsageError('--position must be an event position, a whole number from 1');
  }
  return { projection, position: values.position === undefined ? undefined : Number(values.position) };
};

/** A position that is not parked is the operator's mistake: exit code 2, naming the parked ones. */
const parkedOrUsage = async (stores: Stores, projection: string, position: number) => {
  try {
    return await findParked(stores.readModels, projection, position);
  } catch (error) {
    if (error instanceof NotFoundError) throw new UsageError(error.message);
    throw error;
  }
};

type Output = (text: string, json: unknown) => void;

const commands: Record<
  string,
  { help: string; run: (args: string[], config: Config, print: Output) => Promise<void> }
> = {
  'tenant create': {
    help: 'tenant create --name <name> --email <address>\n  Creates a tenant and its first admin API key.',
    run: async (args, config, print) => {
      const { values } = parseArgs({
        args,
        options: { name: { type: 'string' }, email: { type: 'string' } },
      });
      const body = withFlagNames({ notificationEmail: 'email' }, () =>
        decodeOrThrow(CreateTenantBody, { name: values.name, notificationEmail: values.email }),
      );
      const stores = await openStores(config);
      try {
        const { tenant, adminApiKey } = await createTenant(
          stores.eventStore,
          (prefix) => newId(prefix),
          (tenantId) => ({
            tenantId,
            actor: 'cli',
            correlationId: randomUUID(),
            causationId: null,
            now: new Date(),
            newEventId: () => randomUUID(),
          }),
          body,
        );
        print(
          `Created tenant ${tenant.id} (${tenant.name}).\nAdmin API key, shown only now:\n  ${adminApiKey}`,
          { ...tenant, adminApiKey },
        );
      } finally {
        await stores.close();
      }
    },
  },
  'tenant list': {
    help: 'tenant list\n  Lists every tenant, oldest first.',
    run: async (_args, config, print) => {
      const stores = await openStores(config);
      try {
        // Offline there is no running projection: catch the read model up before reading it.
        const runner = projectionRunner(tenantsProjection, { ...stores, logger: pino({ level: 'silent' }) });
        await runner.start();
        await runner.waitFor(await stores.eventStore.headPosition(), 30_000);
        await runner.stop();
        const tenants = await stores.readModels.list<Tenant>(tenantsProjection.collection.name, {
          tenantId: platformPartition,
          filters: [],
          sort: { field: 'createdAt', direction: 'asc' },
          limit: 10_000,
        });
        print(
          tenants.map((t) => `${t.id}  ${t.name}  ${t.notificationEmail}`).join('\n') || '(no tenants)',
          tenants,
        );
      } finally {
        await stores.close();
      }
    },
  },
  'keys list': {
    help: 'keys list\n  Lists the signing keys in SIGNING_KEYS_FILE (never their private parts).',
    run: (_args, config, print) => {
      const keys = readKeys(config.signingKeysFile).map(({ kid, createdAt, retiredAt }) => ({
        kid,
        createdAt,
        retiredAt,
      }));
      print(
        keys
          .map((k) => `${k.kid}  created ${k.createdAt}${k.retiredAt ? `  retired ${k.retiredAt}` : ''}`)
          .join('\n') || '(no keys)',
        keys,
      );
      return Promise.resolve();
    },
  },
  'keys rotate': {
    help: 'keys rotate\n  Adds a new ES256 key. Running services reload the file: the new key signs, the old ones still verify.',
    run: (_args, config, print) => {
      const key = rotateKeys(config.signingKeysFile);
      print(`New signing key ${key.kid}`, { kid: key.kid, createdAt: key.createdAt });
      return Promise.resolve();
    },
  },
  'audit verify': {
    help: 'audit verify --tenant <id>\n  Reads the whole history; checks every chain and digest. Exit 1 at the first broken link, naming it.',
    run: async (args, config, print) => {
      const { values } = parseArgs({ args, options: { tenant: { type: 'string' } } });
      const tenantId = requireTenant(values.tenant);
      await withStores(config, async (stores) => {
        await assertTenantExists(stores.eventStore, tenantId);
        const progress = progressLine('verified');
        const report = await verifyTenant(stores.eventStore, tenantId, progress.update);
        progress.done();
        const summary = `${report.events} events in ${report.streams} streams, ${report.digests} digests`;
        if (report.broken) {
          const { streamName, version, position, reason } = report.broken;
          print(
            `BROKEN after ${summary}: stream ${streamName}, version ${version}, position ${position}: ${reason}`,
            report,
          );
          throw new ExitError(1);
        }
        print(`OK: ${summary}; every chain and digest holds`, report);
      });
    },
  },
  'audit replay': {
    help: "audit replay --tenant <id> [--stream <name>] [--until <ISO time | position>]\n  Without --stream, prints the history up to --until; with it, the aggregate's state at that point.",
    run: async (args, config, print) => {
      const { values } = parseArgs({
        args,
        options: { tenant: { type: 'string' }, stream: { type: 'string' }, until: { type: 'string' } },
      });
      const tenantId = requireTenant(values.tenant);
      const until = values.until === undefined ? undefined : parseUntil(values.until, new Date());
      await withStores(config, async (stores) => {
        await assertTenantExists(stores.eventStore, tenantId);
        if (values.stream) {
          if (!values.stream.includes(`-${tenantId}_`))
            throw new UsageError(`Stream ${values.stream} is not one of tenant ${tenantId}`);
          const replayed = await stateAt(stores.eventStore, values.stream, until);
          if (!replayed) throw new UsageError(`No aggregate is stored in streams like ${values.stream}`);
          print(
            `${values.stream} at version ${replayed.version}:\n${JSON.stringify(withoutSecrets(replayed.state), null, 2)}`,
            { stream: values.stream, ...replayed },
          );
          return;
        }
        for await (const event of history(stores.eventStore, tenantId, until)) {
          print(
            `${event.position}  ${event.metadata.occurredAt}  ${event.streamName}@${event.streamVersion}  ${event.type}  ${event.metadata.actor}`,
            event,
          );
        }
      });
    },
  },
  'audit digest': {
    help: "audit digest --tenant <id>\n  Records a digest of the tenant's stream heads now (the service also does so on AUDIT_DIGEST_SCHEDULE).",
    run: async (args, config, print) => {
      const { values } = parseArgs({ args, options: { tenant: { type: 'string' } } });
      const tenantId = requireTenant(values.tenant);
      await withStores(config, async (stores) => {
        await assertTenantExists(stores.eventStore, tenantId);
        const runner = projectionRunner(streamHeadsProjection, {
          ...stores,
          logger: pino({ level: 'silent' }),
        });
        await runner.start();
        await runner.waitFor(await stores.eventStore.headPosition(), 60_000);
        await runner.stop();
        const digest = await recordDigest(stores.eventStore, stores.readModels, tenantId, new Date());
        print(
          digest
            ? `Digest of ${digest.streams} streams up to position ${digest.upToPosition}: ${digest.root}`
            : 'Nothing new since the last digest',
          digest,
        );
      });
    },
  },
  'keys retire': {
    help: 'keys retire <kid>\n  Retires a key: tokens signed with it stop verifying.',
    run: (args, config, print) => {
      const kid = args[0];
      if (!kid || args.length > 1) throw new UsageError('keys retire needs exactly one <kid>');
      if (!retireKey(config.signingKeysFile, kid))
        throw new UsageError(`No active key ${kid}; see "keys list"`);
      print(`Retired ${kid}`, { kid, retired: true });
      return Promise.resolve();
    },
  },
  'projections rebuild': {
    help: `projections rebuild [name ...] [--tenant <id>] [--batch-size <n>] [--restart]
  Rebuilds read models from the events into fresh collections and swaps each in atomically once it has
  caught up (blue/green): the service keeps serving the old one until then. Without names, every read model.
  With --tenant, only that tenant's documents are rebuilt and replaced. Ctrl-C stops it (exit code 130)
  leaving the live read model untouched; the same command resumes where it stopped (--restart starts over).
  Known names: ${projectionNames()}`,
    run: async (args, config, print) => {
      const { values, positionals } = parseArgs({
        args,
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
      await withStores(config, async (stores) => {
        if (tenantId) await assertTenantExists(stores.eventStore, tenantId);
        const results = await interruptible(async (signal) => {
          const outcomes = [];
          for (const { projection } of chosen) {
            const reporter = progressReporter(process.stderr);
            const outcome = await rebuild(projection, stores, {
              signal,
              onProgress: reporter.update,
              restart: values.restart === true,
              ...(tenantId ? { tenantId } : {}),
              ...(batchSize ? { batchSize } : {}),
            });
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
    run: async (args, config, print) => {
      parseArgs({ args, options: {} });
      await withStores(config, async (stores) => {
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
  'projections parked retry': {
    help: `projections parked retry <name> [--position <n>]
  Applies the projection's parked events (or the one at --position) to the live read model again. One that
  now applies leaves the list (recorded as ProjectionEventRetried); one that fails stays parked with the new
  error (recorded as ProjectionEventParked). Exit code 1 when any is still parked.`,
    run: async (args, config, print) => {
      const { projection, position } = parkedArgs(args, false);
      await withStores(config, async (stores) => {
        const chosen =
          position === undefined
            ? await stores.readModels.listParked(projection.name)
            : [await parkedOrUsage(stores, projection.name, position)];
        const outcomes = [];
        for (const parked of chosen) {
          try {
            outcomes.push(await retryParked(projection, stores, parked));
          } catch (error) {
            // Out of order: this one stays as it is; the others are still worth a try.
            if (!(error instanceof ConflictError)) throw error;
            outcomes.push({ position: parked.position, outcome: 'parked' as const, error: error.message });
          }
        }
        print(
          outcomes
            .map((o) =>
              o.outcome === 'applied'
                ? `${projection.name} position ${o.position}: applied, no longer parked`
                : `${projection.name} position ${o.position}: still parked: ${o.error}`,
            )
            .join('\n') || `${projection.name}: no parked events`,
          outcomes,
        );
        if (outcomes.some((o) => o.outcome === 'parked')) throw new ExitError(1);
      });
    },
  },
  'projections parked skip': {
    help: `projections parked skip <name> --position <n>
  Removes a parked event from the list on purpose: the read model stays without it. Recorded as
  ProjectionEventSkipped in the tenant's history.`,
    run: async (args, config, print) => {
      const { projection, position } = parkedArgs(args, true);
      await withStores(config, async (stores) => {
        const parked = await parkedOrUsage(stores, projection.name, position!);
        await skipParked(stores, parked);
        print(`${projection.name} position ${parked.position}: skipped, no longer parked`, {
          ...parked,
          skipped: true,
        });
      });
    },
  },
  'projections build': {
    help: `projections build <name> --until <ISO time|position> --into <snapshot> [--tenant <id>] [--restart]
  Builds the read model as it was at that moment into a new collection beside the live one, never swapped
  in; "export <name> --from <snapshot>" reads it. An interrupted build resumes when run again.`,
    run: async (args, config, print) => {
      const { values, positionals } = parseArgs({
        args,
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
      const { projection } = knownProjection(positionals[0]!);
      if (!values.until) throw new UsageError('--until <ISO time|position> is required');
      if (!values.into) throw new UsageError('--into <snapshot name> is required');
      const until = parseUntil(values.until, new Date());
      const tenantId = values.tenant === undefined ? undefined : requireTenant(values.tenant);
      const batchSize = batchSizeOption(values['batch-size']);
      const into = values.into;
      await withStores(config, async (stores) => {
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
              signal,
              onProgress: reporter.update,
              restart: values.restart === true,
              ...(tenantId ? { tenantId } : {}),
              ...(batchSize ? { batchSize } : {}),
            }),
          );
          reporter.finish();
          return result;
        });
        print(
          outcome.status === 'interrupted'
            ? `${into}: interrupted at position ${outcome.checkpoint}; run the same command again to resume`
            : `Snapshot ${into} of ${projection.name} as of ${untilText(until)}: position ${outcome.checkpoint}, ${outcome.events} events. Read it with: export ${projection.name} --from ${into} --format ndjson`,
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
    run: async (args, config, print) => {
      const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
      if (positionals.length !== 1) throw new UsageError('projections drop needs one snapshot name');
      const name = positionals[0]!;
      await withStores(config, async (stores) => {
        await inputErrorsAsUsage(() =>
          dropSnapshot(stores, name, (p) => findProjection(p)?.projection.collection),
        );
        print(`Dropped snapshot ${name}`, { snapshot: name, dropped: true });
      });
    },
  },
  export: {
    help: `export <name> --format ndjson|csv [--tenant <id>] [--from <snapshot>]
  Streams a read model to stdout: NDJSON (one document per line) or CSV (a header row, nested fields as
  JSON text). Every tenant's documents unless --tenant; the live read model unless --from names a snapshot.
  Names: ${exportNames()}`,
    run: async (args, config) => {
      const { values, positionals } = parseArgs({
        args,
        allowPositionals: true,
        options: { format: { type: 'string' }, tenant: { type: 'string' }, from: { type: 'string' } },
      });
      const entry = positionals.length === 1 ? findExport(positionals[0]!) : undefined;
      if (!entry?.export) {
        throw new UsageError(
          `${positionals.length === 1 ? `Unknown read model ${positionals[0]}` : 'export needs one name'}; known: ${exportNames()}`,
        );
      }
      const format = values.format;
      if (format !== 'ndjson' && format !== 'csv') throw new UsageError('--format must be ndjson or csv');
      const tenantId = values.tenant === undefined ? undefined : requireTenant(values.tenant);
      const { projection, export: spec } = entry;
      await withStores(config, async (stores) => {
        let collection = projection.collection.name;
        if (values.from !== undefined) {
          const from = values.from;
          const snapshot = await inputErrorsAsUsage(() => findSnapshot(stores.readModels, from));
          if (snapshot.projection !== projection.name) {
            throw new UsageError(`The snapshot ${from} is of ${snapshot.projection}, not ${spec.name}`);
          }
          collection = snapshot.id;
        }
        const controller = new AbortController();
        // A reader that goes away (`| head`) ends the export quietly.
        process.stdout.on('error', () => controller.abort());
        const { documents } = await exportReadModel(
          stores,
          {
            spec: projection.collection,
            collection,
            sortField: spec.sortField,
            columns: spec.columns,
            format,
            signal: controller.signal,
            ...(tenantId ? { tenantId } : {}),
          },
          process.stdout,
        );
        process.stderr.write(`exported ${documents} ${spec.name}\n`);
      });
    },
  },
};

const main = async (argv: string[]): Promise<number> => {
  const json = argv.includes('--json');
  const help = argv.includes('--help') || argv.includes('-h');
  const args = argv.filter((arg) => arg !== '--json' && arg !== '--help' && arg !== '-h');
  // The longest command the words name: `projections parked retry`, `tenant create`, `export visits`.
  // Own properties only: `cli constructor` names no command of Object.prototype.
  const named = (name: string) => (Object.hasOwn(commands, name) ? commands[name] : undefined);
  const words = [3, 2, 1].find((n) => named(args.slice(0, n).join(' '))) ?? 1;
  const command = named(args.slice(0, words).join(' '));
  if (!command) {
    console.log(usage);
    return help && args.length === 0 ? 0 : 2;
  }
  if (help) {
    console.log(`Usage: obs ${command.help}`);
    return 0;
  }
  // Hashes and sealed secrets are redacted from every JSON output, as the history API redacts them.
  const print: Output = (text, value) =>
    console.log(json ? JSON.stringify(withoutSecrets(value), null, 2) : text);
  try {
    await command.run(args.slice(words), loadConfig(), print);
    return 0;
  } catch (error) {
    if (error instanceof ExitError) return error.code;
    const bad =
      error instanceof UntilError ||
      error instanceof UsageError ||
      error instanceof ValidationError ||
      error instanceof ConfigError;
    const message =
      error instanceof ValidationError
        ? error.errors.map((e) => `--${e.path}: ${e.message}`).join('\n')
        : String((error as Error).message);
    console.error(json ? JSON.stringify({ error: message }) : `error: ${message}`);
    return bad || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? 2 : 1;
  }
};

process.exitCode = await main(process.argv.slice(2));

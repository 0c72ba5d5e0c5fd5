import { ConflictError, NotFoundError } from '../core/errors.js';
import { findParked, retryParked, skipParked } from '../readmodels/parked-commands.js';
import type { Stores } from '../stores.js';
import { flags, knownProjection, projectionNames } from './args.js';
import { ExitError, UsageError, type Commands } from './command.js';
import { withStores } from './stores.js';

/** The events a projection parked because they failed to apply: retry them, or skip one on purpose. */

/** `<name> [--position <n>]` of the parked commands. */
const parkedArgs = (args: string[], positionRequired: boolean) => {
  const { values, positionals } = flags(args, {
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

export const parkedCommands: Commands = {
  'projections parked retry': {
    help: `projections parked retry <name> [--position <n>]
  Applies the projection's parked events (or the one at --position) to the live read model again. One that
  now applies leaves the list (recorded as ProjectionEventRetried); one that fails stays parked with the new
  error (recorded as ProjectionEventParked). Exit code 1 when any is still parked.`,
    run: async (args, { print, ...context }) => {
      const { projection, position } = parkedArgs(args, false);
      await withStores(context, async (stores) => {
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
    run: async (args, { print, ...context }) => {
      const { projection, position } = parkedArgs(args, true);
      await withStores(context, async (stores) => {
        const parked = await parkedOrUsage(stores, projection.name, position!);
        await skipParked(stores, parked);
        print(`${projection.name} position ${parked.position}: skipped, no longer parked`, {
          ...parked,
          skipped: true,
        });
      });
    },
  },
};

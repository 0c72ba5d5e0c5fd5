import { findExport } from '../domains.js';
import { exportReadModel } from '../readmodels/export.js';
import { findSnapshot } from '../readmodels/rebuild.js';
import { exportNames, flags, requireTenant } from './args.js';
import { inputErrorsAsUsage, UsageError, type Commands } from './command.js';
import { assertTenantExists, withStores } from './stores.js';

/** A read model, or a snapshot of one, streamed to stdout as NDJSON or CSV. */
export const exportCommands: Commands = {
  export: {
    help: `export <name> --format ndjson|csv [--tenant <id>] [--from <snapshot>]
  Streams a read model to stdout: NDJSON (one document per line) or CSV (a header row, nested fields as
  JSON text). Every tenant's documents unless --tenant; the live read model unless --from names a snapshot.
  Names: ${exportNames()}`,
    run: async (args, context) => {
      const { values, positionals } = flags(args, {
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
      await withStores(context, async (stores) => {
        // A tenant that does not exist would export nothing, as if it had no data: refused, as audit does.
        if (tenantId) await assertTenantExists(stores.eventStore, tenantId);
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

import type pg from 'pg';
import { inTransaction, orUnavailable, type PoolOptions } from '../postgres/client.js';
import { acquireMigrated } from '../postgres/migrate.js';
import { CollectionSwappedError } from './port.js';
import type {
  CollectionSpec,
  DocumentChange,
  DocumentKey,
  JsonRow,
  ListQuery,
  ParkedProjectionEvent,
  ProjectionState,
  ReadModelStore,
  SwapRequest,
} from './port.js';
import { describeTable, dropTable, ensureTable } from './postgres-ddl.js';
import { jsonFromStored, toStored } from './postgres-nul.js';
import { documentLines, schema, stored, upsertSql, type DocumentRow } from './postgres-rows.js';
import {
  addFilter,
  addKeyset,
  column,
  Conditions,
  continuesIntoNulls,
  orderBy,
  table,
  tableName,
} from './postgres-sql.js';

/**
 * Read models in PostgreSQL, one table `rm_<collection>` per collection: the document whole as JSONB, with
 * each queryable field a generated column over it, so that filters, indexes and keyset sorting work on
 * plain columns (see ./postgres-sql.ts). Deleted documents stay as tombstones (doc IS NULL), so that their
 * position still guards them. A commit writes the documents and moves the checkpoint in one transaction.
 *
 * Blue/green: the live collection is always the table `rm_<logical name>`; a swap renames the build over it
 * in one transaction, so every statement that names the table reads the old one or the new one, never a
 * mix (a statement waiting for the swap's lock finds the new table when it gets it). Each swap bumps the
 * live checkpoint's `epoch`. A commit locks its checkpoint row first and compares the epoch with the one
 * the runner subscribed under (getProjectionState): a runner whose batch was folded from the replaced table
 * gets CollectionSwappedError and resubscribes from the swapped-in checkpoint, instead of writing documents
 * folded from the old table into the new one. (A swap made by this process moves its own writers to the new
 * epoch at once, as the port's other adapters do: the check guards against swaps made elsewhere, such as by
 * the command line beside a running service.)
 */

/** SQLSTATEs of a transaction that lost a race and may simply run again: serialization failure, deadlock. */
const retryable = new Set(['40001', '40P01']);

const isRetryable = (error: unknown): boolean => retryable.has(String((error as { code?: unknown }).code));

/** Only the last change of each document can win; one INSERT … ON CONFLICT may touch a row only once. */
const latestByCollection = (changes: readonly DocumentChange[]): Map<string, DocumentChange[]> => {
  const latest = new Map<string, Map<string, DocumentChange>>();
  for (const change of changes) {
    const documents = latest.get(change.collection) ?? new Map<string, DocumentChange>();
    latest.set(change.collection, documents);
    const key = `${change.tenantId}\u0000${change.id}`;
    const seen = documents.get(key);
    if (!seen || seen.position < change.position) documents.set(key, change);
  }
  return new Map([...latest].map(([collection, documents]) => [collection, [...documents.values()]]));
};

export const openPostgresReadModels = async (
  url: string,
  options: PoolOptions = {},
): Promise<ReadModelStore> => {
  const handle = await acquireMigrated(url, options, 'readmodels', schema);
  let closed = false;
  /** The shared pool outlives this store: a store used after close fails as the other adapters' do. */
  const pool = (): pg.Pool => {
    if (closed) throw new Error('The PostgreSQL read-model store is closed');
    return handle.pool;
  };
  const run = <R extends pg.QueryResultRow>(sql: string, values?: unknown[]) =>
    orUnavailable(pool().query<R>(sql, values));

  /** The specs of the collections ensured here, by the name they were ensured under. */
  const specs = new Map<string, CollectionSpec>();
  /** Names ensured as logical collections (not builds or snapshots): never dropped. */
  const live = new Set<string>();
  /** Names ensured as builds or snapshots: no one reads them before a swap. */
  const building = new Set<string>();
  /** The swap epoch each projection was last subscribed (or committed) under, in this process. */
  const epochs = new Map<string, number>();

  const specOf = (collection: string): CollectionSpec => {
    const spec = specs.get(collection);
    if (!spec) throw new Error(`Unknown read-model collection: ${collection}`);
    return spec;
  };

  const select = async (collection: string, query: ListQuery): Promise<JsonRow[]> => {
    const spec = specOf(collection);
    if (query.limit <= 0) return [];
    const sortColumn = column(query.sort.field);
    const page = async (bound: (where: Conditions) => void, limit: number) => {
      const where = new Conditions();
      where.add(`tenant_id = ${where.param(query.tenantId, 'text')}`);
      where.add('doc IS NOT NULL');
      for (const filter of query.filters) addFilter(where, spec, filter);
      bound(where);
      const sql = `SELECT doc::text AS json, escaped, id, ${sortColumn} AS "sortValue" FROM ${table(collection)}
        WHERE ${where.where()} ORDER BY ${orderBy(query)} LIMIT ${where.param(limit, 'integer')}`;
      const { rows } = await run<JsonRow & { escaped: boolean }>(sql, where.values);
      return rows.map(({ json, escaped, id, sortValue }) => ({
        json: jsonFromStored(json, escaped),
        id,
        sortValue,
      }));
    };
    const rows = await page((where) => addKeyset(where, spec, query), query.limit);
    if (rows.length === query.limit || !continuesIntoNulls(query)) return rows;
    return [
      ...rows,
      ...(await page((where) => where.add(`${sortColumn} IS NULL`), query.limit - rows.length)),
    ];
  };

  const commitOnce = (projection: string, changes: readonly DocumentChange[], checkpoint: number) => {
    // The documents are encoded before BEGIN: inside the transaction, only statements (client.ts).
    const batches = [...latestByCollection(changes)].map(([collection, latest]) => {
      const docs = latest.map((change) =>
        toStored(change.doc, () => `the document ${change.id} of ${change.collection}`),
      );
      return {
        collection,
        sql: upsertSql(collection),
        values: [
          latest.map((change) => change.tenantId),
          latest.map((change) => change.id),
          latest.map((change) => change.position),
          documentLines(docs.map((doc) => doc.json)),
          docs.map((doc) => doc.escaped),
        ],
      };
    });
    // A build's documents and checkpoint are lost together or not at all: after a crash it resumes from the
    // checkpoint that survived. So its commits need not wait for the flush; the swap's commit flushes them.
    const deferFlush = batches.length > 0 && batches.every((batch) => building.has(batch.collection));
    return inTransaction(pool(), async (client) => {
      if (deferFlush) await client.query('SET LOCAL synchronous_commit = off');
      // The checkpoint row first: a swap locks it before the tables, so the two never wait on each other.
      // Moved and locked in one statement, which also says the epoch it holds: one round trip less per
      // batch than a locking read before the documents and the move after them. A swapped epoch throws,
      // and the move is rolled back with the transaction.
      const { rows } = await client.query<{ epoch: string }>(
        `INSERT INTO readmodel_checkpoints (projection, position) VALUES ($1, $2)
         ON CONFLICT (projection) DO UPDATE
           SET position = greatest(readmodel_checkpoints.position, excluded.position)
         RETURNING epoch`,
        [projection, checkpoint],
      );
      const epoch = Number(rows[0]?.epoch ?? 0);
      const subscribed = epochs.get(projection);
      if (subscribed !== undefined && subscribed !== epoch) throw new CollectionSwappedError(projection);
      for (const batch of batches) await client.query(batch.sql, batch.values);
      return epoch;
    });
  };

  const swap = async (request: SwapRequest): Promise<boolean> =>
    inTransaction(
      pool(),
      async (client): Promise<number> => {
        const { projection, sourceProjection } = request;
        const liveTable = tableName(request.collection);
        const sourceTable = tableName(request.source);
        if (liveTable === sourceTable)
          throw new Error(`${request.source} is already the live ${request.collection}`);
        // The checkpoint rows first (as commits do), in one order; then the tables.
        await client.query(
          `INSERT INTO readmodel_checkpoints (projection) VALUES ($1), ($2) ON CONFLICT DO NOTHING`,
          [projection, sourceProjection],
        );
        const { rows } = await client.query<{ projection: string; position: string; epoch: string }>(
          `SELECT projection, position, epoch FROM readmodel_checkpoints
         WHERE projection IN ($1, $2) ORDER BY projection FOR UPDATE`,
          [projection, sourceProjection],
        );
        const liveRow = rows.find((row) => row.projection === projection);
        const sourcePosition = Number(rows.find((row) => row.projection === sourceProjection)?.position ?? 0);
        if (Number(liveRow?.position ?? 0) > sourcePosition) {
          // Nothing changed but the rows made above for the lock; the rollback takes them back.
          throw new SwapRefused();
        }
        // A live collection that was never ensured has no table yet: the build simply becomes it.
        const liveExists = (await describeTable(client, liveTable)).exists;
        const locked = liveExists ? [request.collection, request.source] : [request.source];
        await client.query(`LOCK TABLE ${locked.map(table).join(', ')} IN ACCESS EXCLUSIVE MODE`);
        if (request.tenantId !== undefined) {
          // Only the tenant's documents move; the live checkpoint stays, since the others' have not moved.
          await client.query(`DELETE FROM ${table(request.collection)} WHERE tenant_id = $1`, [
            request.tenantId,
          ]);
          await client.query(
            `INSERT INTO ${table(request.collection)} (tenant_id, id, position, doc, escaped)
           SELECT tenant_id, id, position, doc, escaped FROM ${table(request.source)} WHERE tenant_id = $1`,
            [request.tenantId],
          );
          await client.query(`DROP TABLE ${table(request.source)}`);
          await client.query('UPDATE readmodel_checkpoints SET epoch = epoch + 1 WHERE projection = $1', [
            projection,
          ]);
        } else {
          const indexes = await describeTable(client, sourceTable);
          if (liveExists) await client.query(`DROP TABLE ${table(request.collection)}`);
          await client.query(`ALTER TABLE ${table(request.source)} RENAME TO "${liveTable}"`);
          // Index names carry their table's name: the next build of the same name must not find them taken.
          for (const index of indexes.indexes) {
            if (!index.startsWith(`${sourceTable}_`)) continue;
            const renamed = `${liveTable}_${index.slice(sourceTable.length + 1)}`;
            await client.query(`ALTER INDEX "${index}" RENAME TO "${renamed}"`);
          }
          await client.query(
            'UPDATE readmodel_checkpoints SET position = $2, epoch = epoch + 1 WHERE projection = $1',
            [projection, sourcePosition],
          );
        }
        await client.query('DELETE FROM readmodel_checkpoints WHERE projection = $1', [sourceProjection]);
        return Number(liveRow?.epoch ?? 0) + 1;
        // A tenant's copy, or the wait for the tables' locks, may outlast the sessions' statement time-out.
      },
      { unbounded: true },
    ).then(
      (epoch) => {
        // This process made the swap: its own writers address the new table from now on.
        epochs.set(request.projection, epoch);
        specs.delete(request.source);
        building.delete(request.source);
        return true;
      },
      (error: unknown) => {
        if (error instanceof SwapRefused) return false;
        throw error;
      },
    );

  return {
    kind: 'postgres',

    ensureCollection: async (spec, physicalName, options) => {
      const name = physicalName ?? spec.name;
      await ensureTable(pool(), spec, name, options?.indexes !== false);
      specs.set(name, spec);
      if (physicalName) building.add(name);
      else live.add(name);
    },

    get: async <D>(collection: string, { tenantId, id }: DocumentKey) => {
      const { rows } = await run<DocumentRow>(
        `SELECT tenant_id, id, position, doc, escaped FROM ${table(collection)} WHERE tenant_id = $1 AND id = $2`,
        [tenantId, id],
      );
      return stored<D>(rows[0]);
    },

    getMany: async <D>(collection: string, keys: readonly DocumentKey[]) => {
      if (keys.length === 0) return [];
      const { rows } = await run<DocumentRow>(
        `SELECT tenant_id, id, position, doc, escaped FROM ${table(collection)}
         WHERE (tenant_id, id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
        [keys.map((key) => key.tenantId), keys.map((key) => key.id)],
      );
      const found = new Map(rows.map((row) => [`${row.tenant_id}\u0000${row.id}`, row]));
      return keys.map((key) => stored<D>(found.get(`${key.tenantId}\u0000${key.id}`)));
    },

    list: async <D>(collection: string, query: ListQuery) =>
      (await select(collection, query)).map((row) => JSON.parse(row.json) as D),

    listJson: select,

    commit: async (projection, changes, checkpoint) => {
      // A deadlock or serialization failure is a lost race, not the batch's fault: run it again.
      for (let attempt = 1; ; attempt += 1) {
        try {
          epochs.set(projection, await commitOnce(projection, changes, checkpoint));
          return;
        } catch (error) {
          if (attempt >= 3 || !isRetryable(error)) throw error;
        }
      }
    },

    getCheckpoint: async (projection) => {
      const { rows } = await run<{ position: string }>(
        'SELECT position FROM readmodel_checkpoints WHERE projection = $1',
        [projection],
      );
      return Number(rows[0]?.position ?? 0);
    },

    getProjectionState: async (projection): Promise<ProjectionState> => {
      const { rows } = await run<{
        position: string;
        epoch: string;
        last_error: string | null;
        last_error_at: string | null;
      }>(
        'SELECT position, epoch, last_error, last_error_at FROM readmodel_checkpoints WHERE projection = $1',
        [projection],
      );
      const row = rows[0];
      // A runner reads this when it subscribes: its commits are checked against this epoch.
      epochs.set(projection, Number(row?.epoch ?? 0));
      return {
        checkpoint: Number(row?.position ?? 0),
        lastError: row?.last_error ? { message: row.last_error, at: row.last_error_at ?? '' } : null,
      };
    },

    recordError: async (projection, message) => {
      await run(
        `INSERT INTO readmodel_checkpoints (projection, last_error, last_error_at) VALUES ($1, $2, $3)
         ON CONFLICT (projection) DO UPDATE
           SET last_error = excluded.last_error, last_error_at = excluded.last_error_at`,
        [projection, message, message === null ? null : new Date().toISOString()],
      );
    },

    parkEvent: async (parked) => {
      await run(
        `INSERT INTO readmodel_parked_events
           (projection, position, tenant_id, event_id, event_type, error, parked_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (projection, position) DO UPDATE
           SET error = excluded.error, parked_at = excluded.parked_at`,
        [
          parked.projection,
          parked.position,
          parked.tenantId,
          parked.eventId,
          parked.eventType,
          parked.error,
          parked.parkedAt,
        ],
      );
    },

    listParked: async (projection) => {
      const columns = `projection, position::float8 AS position, tenant_id AS "tenantId",
        event_id AS "eventId", event_type AS "eventType", error, parked_at AS "parkedAt"`;
      const { rows } =
        projection === undefined
          ? await run<ParkedProjectionEvent>(
              `SELECT ${columns} FROM readmodel_parked_events ORDER BY projection, position`,
            )
          : await run<ParkedProjectionEvent>(
              `SELECT ${columns} FROM readmodel_parked_events WHERE projection = $1 ORDER BY position`,
              [projection],
            );
      return rows;
    },

    unpark: async (projection, position) =>
      ((
        await run('DELETE FROM readmodel_parked_events WHERE projection = $1 AND position = $2', [
          projection,
          position,
        ])
      ).rowCount ?? 0) > 0,

    reset: async (projection, collection) => {
      await inTransaction(pool(), async (client) => {
        await client.query('DELETE FROM readmodel_checkpoints WHERE projection = $1', [projection]);
        await client.query(`TRUNCATE ${table(collection)}`);
      });
    },

    swap,

    dropCollection: async (physicalName) => {
      if (live.has(physicalName))
        throw new Error(`${physicalName} is a live collection; it cannot be dropped`);
      await dropTable(pool(), physicalName);
      specs.delete(physicalName);
      building.delete(physicalName);
    },

    ping: async () => {
      await run('SELECT 1');
    },

    close: async () => {
      closed = true;
      await handle.release();
    },
  };
};

/** A swap refused inside its transaction: rolled back, and answered as false. */
class SwapRefused extends Error {}

import Database from 'better-sqlite3';
import { openSqliteFile } from '../core/sqlite-file.js';
import { sqliteBusyTimeoutMs, whenFree } from '../core/sqlite-busy.js';
import { groupCommit } from './sqlite-group-commit.js';
import type {
  CollectionSpec,
  DocumentKey,
  ProjectionState,
  SwapRequest,
  DocumentChange,
  JsonRow,
  ListQuery,
  ParkedProjectionEvent,
  ReadModelStore,
  StoredDocument,
} from './port.js';
import {
  column,
  continuesIntoNulls,
  createIndexesSql,
  createTableSql,
  filterSql,
  generatedColumn,
  keysetSql,
  type SqlPart,
  table,
} from './sqlite-sql.js';

/**
 * Embedded read models: one SQLite file, one table per collection. A document is stored whole as JSON;
 * each queryable field is a generated column over it, so indexes, filters and keyset sorting work on plain
 * columns. The columns are STORED (tables made before were VIRTUAL, which works the same): computed once per
 * write, so that building an index (a rebuild builds them all at the end) does not parse every document
 * again. Deleted documents stay as tombstones (doc IS NULL) so that their position still guards them.
 *
 * Blue/green: the `collections` table maps a logical collection to the physical table that holds it now
 * (`rm_<logical>` when it has no row). Reads and commits keep the table they found until it is gone, and a
 * swap drops the table it replaces, so a swap committed by another process (the CLI beside the service) is
 * followed by the next query or commit either way.
 */

export const openSqliteReadModels = (file: string): ReadModelStore => {
  // Read models can be rebuilt from the events, and the checkpoint rolls back with them: NORMAL is enough.
  const db = openSqliteFile(file);
  db.exec(`
    CREATE TABLE IF NOT EXISTS checkpoints (
      projection TEXT PRIMARY KEY, position INTEGER NOT NULL, last_error TEXT, last_error_at TEXT
    );
    CREATE TABLE IF NOT EXISTS collections (name TEXT PRIMARY KEY, physical TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS parked_events (
      projection TEXT NOT NULL, position INTEGER NOT NULL, tenant_id TEXT NOT NULL, event_id TEXT NOT NULL,
      event_type TEXT NOT NULL, error TEXT NOT NULL, parked_at TEXT NOT NULL,
      PRIMARY KEY (projection, position)
    ) WITHOUT ROWID;`);
  // Files made before runners kept their last error.
  const columns = db.pragma('table_info(checkpoints)') as { name: string }[];
  for (const added of ['last_error', 'last_error_at'].filter((c) => !columns.some((k) => k.name === c))) {
    try {
      db.exec(`ALTER TABLE checkpoints ADD COLUMN ${added} TEXT`);
    } catch (error) {
      // Another process opening the same file at the same moment added it first.
      if (!String((error as Error).message).includes('duplicate column')) throw error;
    }
  }

  /**
   * Fields declared after the table was made. SQLite adds a generated column only as VIRTUAL (computed on
   * read, and once into each index over it), which queries and indexes use like the STORED ones.
   */
  const addDeclaredColumns = (spec: CollectionSpec, tableName: string) => {
    const found = new Set((db.pragma(`table_xinfo(${tableName})`) as { name: string }[]).map((c) => c.name));
    for (const [name, field] of Object.entries(spec.fields)) {
      if (found.has(column(name))) continue;
      try {
        db.exec(`ALTER TABLE ${tableName} ADD COLUMN ${generatedColumn(name, field, 'VIRTUAL')}`);
      } catch (error) {
        // Another process opening the same file at the same moment added it first.
        if (!String((error as Error).message).includes('duplicate column')) throw error;
      }
    }
  };

  const collections = new Map<string, CollectionSpec>();
  const statements = new Map<string, Database.Statement>();
  const prepare = (sql: string) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  const mapped = db.prepare('SELECT physical FROM collections WHERE name = ?').pluck();
  /** The table that holds the collection now. */
  const physicalTable = (collection: string): string =>
    table((mapped.get(collection) as string | undefined) ?? collection);
  /**
   * The tables reads last found, kept until a read finds its table gone: a swap drops the table it replaces
   * in the same transaction, so a kept name is either current or missing, never another collection's old
   * table. A lookup per list was a statement of its own, a fifth of a list's SQLite time.
   */
  const readTables = new Map<string, string>();
  /** Names ensured as physical collections (builds, snapshots) are their own tables: no lookup. */
  const physicalNames = new Set<string>();
  const known = (collection: string) => {
    if (!collections.has(collection)) throw new Error(`Unknown read-model collection: ${collection}`);
    return physicalNames.has(collection) ? table(collection) : physicalTable(collection);
  };
  /**
   * Runs a read on the collection's table as last found. A swap (here, or in another process between a
   * lookup and the read) drops that table: then the mapping is looked up again, at most twice, and the read
   * goes to the table that replaced it.
   */
  const reading = <T>(collection: string, read: (tableName: string) => T): T => {
    let tableName = readTables.get(collection);
    for (let lookups = 0; ;) {
      if (tableName === undefined) {
        tableName = known(collection);
        readTables.set(collection, tableName);
        lookups += 1;
      }
      try {
        return read(tableName);
      } catch (error) {
        const tableGone = error instanceof Database.SqliteError && error.message.includes('no such table');
        if (!tableGone || lookups === 2) throw error;
        readTables.delete(collection);
        tableName = undefined;
      }
    }
  };
  const checkpointOf = (projection: string): number =>
    (prepare('SELECT position FROM checkpoints WHERE projection = ?').pluck().get(projection) as
      number | undefined) ?? 0;

  const moveCheckpoint = db.prepare(
    `INSERT INTO checkpoints (projection, position) VALUES (?, ?)
     ON CONFLICT (projection) DO UPDATE SET position = max(position, excluded.position)`,
  );

  /**
   * A projection's batch and its checkpoint, committed together with the other projections' of the same
   * moment (sqlite-group-commit.ts). Each document goes to its collection's table as last found, as reads
   * do: a swap drops the table it replaces, so a kept name is current or gone, and a gone one is looked up.
   */
  const commit = groupCommit(
    db,
    ({
      projection,
      changes,
      checkpoint,
    }: {
      projection: string;
      changes: readonly DocumentChange[];
      checkpoint: number;
    }) => {
      for (const change of changes) {
        reading(change.collection, (tableName) =>
          prepare(
            `INSERT INTO ${tableName} (tenant_id, id, position, doc) VALUES (?, ?, ?, ?)
             ON CONFLICT (tenant_id, id) DO UPDATE SET position = excluded.position, doc = excluded.doc
             WHERE excluded.position > position`,
          ).run(
            change.tenantId,
            change.id,
            change.position,
            change.doc === null ? null : JSON.stringify(change.doc),
          ),
        );
      }
      moveCheckpoint.run(projection, checkpoint);
    },
  );

  const swap = db.transaction((request: SwapRequest): boolean => {
    if (checkpointOf(request.projection) > checkpointOf(request.sourceProjection)) return false;
    const live = physicalTable(request.collection);
    const source = table(request.source);
    if (live === source) throw new Error(`${request.source} is already the live ${request.collection}`);
    if (request.tenantId !== undefined) {
      // Only the tenant's documents move; the live checkpoint stays, since the others' have not moved.
      prepare(`DELETE FROM ${live} WHERE tenant_id = ?`).run(request.tenantId);
      prepare(
        `INSERT INTO ${live} (tenant_id, id, position, doc)
         SELECT tenant_id, id, position, doc FROM ${source} WHERE tenant_id = ?`,
      ).run(request.tenantId);
      db.exec(`DROP TABLE ${source}`);
    } else {
      prepare(
        `INSERT INTO collections (name, physical) VALUES (?, ?)
         ON CONFLICT (name) DO UPDATE SET physical = excluded.physical`,
      ).run(request.collection, request.source);
      prepare(
        `INSERT INTO checkpoints (projection, position) VALUES (?, ?)
         ON CONFLICT (projection) DO UPDATE SET position = excluded.position`,
      ).run(request.projection, checkpointOf(request.sourceProjection));
      db.exec(`DROP TABLE IF EXISTS ${live}`);
    }
    prepare('DELETE FROM checkpoints WHERE projection = ?').run(request.sourceProjection);
    return true;
  });

  const select = (collection: string, query: ListQuery): JsonRow[] => {
    const direction = query.sort.direction === 'desc' ? 'DESC' : 'ASC';
    const sortColumn = column(query.sort.field);
    const page = (tableName: string, bound: SqlPart, limit: number): JsonRow[] => {
      const parts = [...query.filters.map(filterSql), bound].filter((part) => part.sql !== '');
      const sql = `SELECT doc AS json, id, ${sortColumn} AS sortValue FROM ${tableName}
      WHERE tenant_id = ? AND doc IS NOT NULL${parts.map((part) => ` AND ${part.sql}`).join('')}
      ORDER BY ${sortColumn} ${direction}, id ${direction} LIMIT ?`;
      return prepare(sql).all(query.tenantId, ...parts.flatMap((part) => part.params), limit) as JsonRow[];
    };
    return reading(collection, (tableName) => {
      const rows = page(tableName, keysetSql(query), query.limit);
      if (rows.length === query.limit || !continuesIntoNulls(query)) return rows;
      return [
        ...rows,
        ...page(tableName, { sql: `${sortColumn} IS NULL`, params: [] }, query.limit - rows.length),
      ];
    });
  };

  // Opened: from now on no call waits inside SQLite for another process's lock for longer than this, and
  // every write retries with timers instead (src/core/sqlite-busy.ts).
  db.pragma(`busy_timeout = ${sqliteBusyTimeoutMs}`);

  return {
    kind: 'sqlite',

    ensureCollection: async (spec, physicalName, options) => {
      const name = physicalName ?? spec.name;
      const tableName = physicalName ? table(physicalName) : physicalTable(spec.name);
      await whenFree(() => {
        db.exec(createTableSql(spec, tableName));
        addDeclaredColumns(spec, tableName);
        if (options?.indexes !== false) db.exec(createIndexesSql(spec, tableName));
      });
      collections.set(name, spec);
      if (physicalName) physicalNames.add(physicalName);
    },

    get: <D>(collection: string, { tenantId, id }: { tenantId: string; id: string }) => {
      const row = reading(collection, (tableName) =>
        prepare(`SELECT doc, position FROM ${tableName} WHERE tenant_id = ? AND id = ?`).get(tenantId, id),
      ) as { doc: string | null; position: number } | undefined;
      const found: StoredDocument<D> | null =
        row?.doc != null ? { doc: JSON.parse(row.doc) as D, position: row.position } : null;
      return Promise.resolve(found);
    },

    getMany: <D>(collection: string, keys: readonly DocumentKey[]) => {
      // One read transaction, one statement, for the whole batch.
      const rows = reading(collection, (tableName) => {
        const statement = prepare(`SELECT doc, position FROM ${tableName} WHERE tenant_id = ? AND id = ?`);
        return db.transaction(() => keys.map(({ tenantId, id }) => statement.get(tenantId, id)))();
      }) as ({ doc: string | null; position: number } | undefined)[];
      return Promise.resolve(
        rows.map((row): StoredDocument<D> | null =>
          row?.doc != null ? { doc: JSON.parse(row.doc) as D, position: row.position } : null,
        ),
      );
    },

    list: <D>(collection: string, query: ListQuery) =>
      Promise.resolve(select(collection, query).map((row) => JSON.parse(row.json) as D)),

    listJson: (collection, query) => Promise.resolve(select(collection, query)),

    commit: (projection, changes, checkpoint) => commit({ projection, changes, checkpoint }),

    getCheckpoint: (projection) => Promise.resolve(checkpointOf(projection)),

    getProjectionState: (projection) => {
      const row = prepare(
        'SELECT position, last_error, last_error_at FROM checkpoints WHERE projection = ?',
      ).get(projection) as
        { position: number; last_error: string | null; last_error_at: string | null } | undefined;
      const state: ProjectionState = {
        checkpoint: row?.position ?? 0,
        lastError: row?.last_error ? { message: row.last_error, at: row.last_error_at ?? '' } : null,
      };
      return Promise.resolve(state);
    },

    recordError: async (projection, message) => {
      await whenFree(() =>
        prepare(
          `INSERT INTO checkpoints (projection, position, last_error, last_error_at) VALUES (?, 0, ?, ?)
         ON CONFLICT (projection) DO UPDATE SET last_error = excluded.last_error,
           last_error_at = excluded.last_error_at`,
        ).run(projection, message, message === null ? null : new Date().toISOString()),
      );
    },

    swap: (request) => whenFree(() => swap.immediate(request)),

    dropCollection: async (physicalName) => {
      await whenFree(() =>
        db
          .transaction(() => {
            if (prepare('SELECT 1 FROM collections WHERE physical = ?').get(physicalName)) {
              throw new Error(`${physicalName} is a live collection; it cannot be dropped`);
            }
            db.exec(`DROP TABLE IF EXISTS ${table(physicalName)}`);
          })
          .immediate(),
      );
      collections.delete(physicalName);
      physicalNames.delete(physicalName);
    },

    parkEvent: async (parked) => {
      await whenFree(() =>
        prepare(
          `INSERT INTO parked_events (projection, position, tenant_id, event_id, event_type, error, parked_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (projection, position) DO UPDATE SET error = excluded.error, parked_at = excluded.parked_at`,
        ).run(
          parked.projection,
          parked.position,
          parked.tenantId,
          parked.eventId,
          parked.eventType,
          parked.error,
          parked.parkedAt,
        ),
      );
    },

    listParked: (projection) => {
      const columns = `projection, position, tenant_id AS tenantId, event_id AS eventId,
        event_type AS eventType, error, parked_at AS parkedAt`;
      const rows =
        projection === undefined
          ? prepare(`SELECT ${columns} FROM parked_events ORDER BY projection, position`).all()
          : prepare(`SELECT ${columns} FROM parked_events WHERE projection = ? ORDER BY position`).all(
              projection,
            );
      return Promise.resolve(rows as ParkedProjectionEvent[]);
    },

    unpark: (projection, position) =>
      whenFree(
        () =>
          prepare('DELETE FROM parked_events WHERE projection = ? AND position = ?').run(projection, position)
            .changes > 0,
      ),

    reset: async (projection, collection) => {
      await whenFree(() =>
        db
          .transaction(() => {
            prepare('DELETE FROM checkpoints WHERE projection = ?').run(projection);
            prepare(`DELETE FROM ${known(collection)}`).run();
          })
          .immediate(),
      );
    },

    ping: () => {
      prepare('SELECT 1').get();
      return Promise.resolve();
    },

    close: () => {
      db.close();
      return Promise.resolve();
    },
  };
};

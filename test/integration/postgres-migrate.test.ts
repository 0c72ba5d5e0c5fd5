import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { UnavailableError } from '../../src/core/errors.js';
import { isStoreFailure } from '../../src/core/store-failures.js';
import { acquirePostgres, orUnavailable, type PostgresHandle } from '../../src/postgres/client.js';
import { MigrationError, migrate, schemaVersion } from '../../src/postgres/migrate.js';
import { describePostgres } from '../support/postgres.js';

describePostgres('PostgreSQL: the shared pool and the migration runner', (url) => {
  let handle: PostgresHandle;
  let component: string;
  /** A table name of this test's own, so steps that create it fail when run twice. */
  let table: string;

  beforeEach(() => {
    handle = acquirePostgres(url);
    const suffix = randomBytes(4).toString('hex');
    component = `test-${suffix}`;
    table = `migrated_${suffix}`;
  });
  afterEach(() => handle.release());

  const columns = async (): Promise<string[]> =>
    (
      await handle.pool.query<{ column_name: string }>(
        'SELECT column_name FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position',
        [table],
      )
    ).rows.map((row) => row.column_name);

  describe('migrate', () => {
    it('applies the steps in order once, recording each version, and nothing on a second run', async () => {
      const steps = [`CREATE TABLE ${table} (a int)`, `ALTER TABLE ${table} ADD COLUMN b int`];
      expect(await migrate(handle.pool, component, steps)).to.deep.equal([1, 2]);
      expect(await columns()).to.deep.equal(['a', 'b']);
      expect(await schemaVersion(handle.pool, component)).to.equal(2);
      expect(await migrate(handle.pool, component, steps)).to.deep.equal([]);
    });

    it('applies only the steps a later release appended', async () => {
      const first = [`CREATE TABLE ${table} (a int)`];
      await migrate(handle.pool, component, first);
      expect(
        await migrate(handle.pool, component, [...first, `ALTER TABLE ${table} ADD COLUMN c int`]),
      ).to.deep.equal([2]);
      expect(await columns()).to.deep.equal(['a', 'c']);
    });

    it('rolls a failing step back whole, its record with it, and keeps the steps before it', async () => {
      const steps = [
        `CREATE TABLE ${table} (a int)`,
        // Two statements in one step: the first one's column must go when the second fails.
        `ALTER TABLE ${table} ADD COLUMN b int; SELECT no_such_function()`,
      ];
      const error = await migrate(handle.pool, component, steps).catch((e: unknown) => e);
      expect((error as Error).message).to.match(/no_such_function/);
      expect(await columns()).to.deep.equal(['a']);
      expect(await schemaVersion(handle.pool, component)).to.equal(1);
    });

    it('serializes starters on several pools at once: each step runs once', async () => {
      // Other pools, as other processes would have; CREATE TABLE without IF NOT EXISTS fails when run twice.
      const steps = [`CREATE TABLE ${table} (a int)`, `ALTER TABLE ${table} ADD COLUMN b int`];
      const others = Array.from({ length: 3 }, (_, n) =>
        acquirePostgres(`${url}?application_name=starter${n}`),
      );
      const pools = [handle.pool, ...others.map((other) => other.pool)];
      try {
        const applied = await Promise.all(pools.map((pool) => migrate(pool, component, steps)));
        expect(applied.flat().sort()).to.deep.equal([1, 2]);
      } finally {
        await Promise.all(others.map((other) => other.release()));
      }
      const { rows } = await handle.pool.query('SELECT version FROM schema_migrations WHERE component = $1', [
        component,
      ]);
      expect(rows).to.have.length(2);
    });

    it('keeps components apart', async () => {
      await migrate(handle.pool, component, [`CREATE TABLE ${table} (a int)`]);
      expect(await schemaVersion(handle.pool, `${component}-other`)).to.equal(0);
    });

    it('refuses a database a newer release migrated further than it knows', async () => {
      await migrate(handle.pool, component, [`CREATE TABLE ${table} (a int)`, 'SELECT 1']);
      const error = await migrate(handle.pool, component, [`CREATE TABLE ${table} (a int)`]).catch(
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(MigrationError);
      expect((error as Error).message).to.include('version 2');
    });
  });

  describe('the shared pool', () => {
    it('is one pool per connection string until its last user releases it', async () => {
      const second = acquirePostgres(url);
      expect(second.pool).to.equal(handle.pool);
      await second.release();
      await second.release(); // idempotent: the first user still holds it
      expect((await handle.pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one).to.equal(1);
    });

    it('makes a server that cannot be reached a 503 and a store failure', async () => {
      // Port 1 on loopback: nothing listens there.
      const nowhere = acquirePostgres('postgresql://nobody@127.0.0.1:1/none');
      try {
        const error = await orUnavailable(nowhere.pool.query('SELECT 1')).catch((e: unknown) => e);
        expect(error).to.be.instanceOf(UnavailableError);
        expect((error as UnavailableError).status).to.equal(503);
        expect(isStoreFailure(error)).to.equal(true);
      } finally {
        await nowhere.release();
      }
    });

    it('leaves an error of the statement as it is', async () => {
      const error = await orUnavailable(handle.pool.query('SELECT no_such_column FROM pg_class')).catch(
        (e: unknown) => e,
      );
      expect(error).not.to.be.instanceOf(UnavailableError);
      expect((error as { code?: string }).code).to.equal('42703');
    });
  });
});

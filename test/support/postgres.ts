import { stderrOf, throwawayDatabases } from './throwaway-postgres.js';

/**
 * The tests' PostgreSQL databases, `obs_test_<pid>_<random>`, on the server libpq's variables name, the
 * local cluster started (and the OS user's role made) when needed: see throwaway-postgres.ts.
 */
const databases = throwawayDatabases('obs_test');

let created: { url: string } | { error: Error } | null = null;

/** Creates a database that is dropped when this process exits; returns its connection string. */
export const createTestDatabase = (): string => databases.create().url;

/** The run's database, created on first use and shared by every suite of this process. Throws when it cannot be had. */
export const postgresUrl = (): string => {
  if (!created) {
    try {
      created = { url: createTestDatabase() };
    } catch (error) {
      created = { error: new Error(`PostgreSQL is not available for the tests: ${stderrOf(error)}`) };
    }
  }
  if ('error' in created) throw created.error;
  return created.url;
};

/**
 * A suite on the run's PostgreSQL database. PostgreSQL is part of this machine's test setup (.ci/run
 * installs and starts it), so a server that cannot be had fails the suite: it never skips.
 */
export const describePostgres = (name: string, body: (url: string) => void): void => {
  describe(name, function () {
    let url: string;
    try {
      url = postgresUrl();
    } catch (error) {
      it('has a PostgreSQL server to run on', () => {
        throw error;
      });
      return;
    }
    body(url);
  });
};

/**
 * A database of one suite's own, made on first use. A service records the fingerprints of its secrets in
 * its database (docs/operations.md#shared-secrets), so in-process services of different suites, each with
 * its own DATA_DIR and generated secrets, cannot share the run's database: the second would be refused.
 */
export const suiteDatabase = (): (() => string) => {
  let url: string | undefined;
  return () => (url ??= createTestDatabase());
};

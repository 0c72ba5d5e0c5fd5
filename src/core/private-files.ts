import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';

/**
 * Makes an SQLite database file readable by its owner alone (0600) before the database opens it. SQLite
 * creates `-wal` and `-shm` with the mode of the database file, so creating the file 0600 first covers
 * them; a database left from before (0644) is narrowed, with its -wal and -shm. A file of another user
 * (an operator's CLI on the service's files) is left as it is. In-memory and URI names are left alone.
 */
export const ownerOnlyDatabase = (file: string): void => {
  if (file === '' || file === ':memory:' || file.startsWith('file:')) return;
  if (!existsSync(file)) closeSync(openSync(file, 'a', 0o600));
  for (const path of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      if (existsSync(path)) chmodSync(path, 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EPERM') throw error;
    }
  }
};

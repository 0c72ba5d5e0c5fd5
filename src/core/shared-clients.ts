/**
 * One client (a MongoDB client, a PostgreSQL pool) per connection string, shared by every adapter of the
 * process that asks for it, and counted: each user releases it once, and the last one out closes it.
 */
export interface SharedEntry {
  users: number;
}

/**
 * The release of one user of `mine`: idempotent; the last user out removes the entry, so that a later
 * acquire makes a new client rather than getting this closing one, then closes it.
 */
export const releaseOfShared = <Entry extends SharedEntry>(
  shared: Map<string, Entry>,
  url: string,
  mine: Entry,
  close: () => Promise<void>,
): (() => Promise<void>) => {
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    mine.users -= 1;
    if (mine.users > 0) return;
    if (shared.get(url) === mine) shared.delete(url);
    await close();
  };
};

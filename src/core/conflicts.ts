import { setTimeout as sleep } from 'node:timers/promises';
import { VersionConflictError } from './errors.js';

/**
 * Runs a command again when another request appended to its stream between the read and the append.
 * Only for commands whose decision is right to retake on the newer state: the token endpoints, where a
 * lost race is not the caller's mistake (an audit record) or must be judged again (a refresh token that
 * the other request has just used); a tenant's webhook subscriptions, one stream that takes no If-Match;
 * the worker's disabling and its e-mail. Requests do interleave between read and append on every store:
 * the embedded one commits appends in groups, PostgreSQL and EventStoreDB serve requests side by side.
 */
export const retryOnConflict = async <T>(run: () => Promise<T>, attempts = 5): Promise<T> => {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await run();
    } catch (error) {
      if (!(error instanceof VersionConflictError) || attempt >= attempts) throw error;
    }
    // Requests that read the same version at once would meet again: a random pause of up to a few
    // milliseconds, longer with each attempt, lets one through at a time.
    await sleep(Math.random() * 2 * attempt);
  }
};

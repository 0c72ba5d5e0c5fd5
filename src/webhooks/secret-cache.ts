import { LRUCache } from 'lru-cache';
import type { Clock } from '../core/ids.js';
import { open } from './secret-box.js';
import type { WebhookEntry } from './subscription.decider.js';

/** Opened secrets kept, by their sealed form: opening one costs a key derivation's worth of work. */
const maxOpenedSecrets = 1000;

/** The subscriptions' signing secrets, opened once and kept (at most `maxOpenedSecrets`). */
export const secretCache = (deps: { secretKey: string; clock: Clock }) => {
  const openedSecrets = new LRUCache<string, string>({ max: maxOpenedSecrets });

  const secretOf = (sealed: string): string => {
    let secret = openedSecrets.get(sealed);
    if (secret === undefined) {
      secret = open(sealed, deps.secretKey);
      openedSecrets.set(sealed, secret);
    }
    return secret;
  };

  /** The secret a rotation replaced, while it still signs beside the new one. */
  const previousSecretOf = (entry: WebhookEntry): string | undefined =>
    entry.previousSealedSecret !== null &&
    Date.parse(entry.previousSecretExpiresAt ?? '') > deps.clock().getTime()
      ? secretOf(entry.previousSealedSecret)
      : undefined;

  return { secretOf, previousSecretOf };
};

export type SecretCache = ReturnType<typeof secretCache>;

import { randomUUID } from 'node:crypto';
import { Binary, MongoServerError, type Collection, type ObjectId } from 'mongodb';
import { UnavailableError } from '../core/errors.js';
import { acquireMongo, orUnavailable } from '../mongodb/client.js';
import type { Claim, IdempotencyStore } from './idempotency-store.js';

const DUPLICATE_KEY = 11000;

interface KeyRow {
  _id?: ObjectId;
  scope: string;
  key: string;
  token: string;
  state: 'pending' | 'completed';
  /** A Date, for the TTL index: MongoDB deletes the record about a minute after it expires. */
  expiresAt: Date;
  fingerprint?: string;
  response?: { status: number; headers: Record<string, string>; body: Binary };
}

const isDuplicateKey = (error: unknown) => error instanceof MongoServerError && error.code === DUPLICATE_KEY;

/**
 * Idempotency records in the MongoDB collection `idempotency_keys`: a unique index on (scope, key) makes a
 * claim one insert of a `pending` record, and a duplicate-key error means the key is in flight or done. A
 * TTL index on `expiresAt` removes old records; until the TTL monitor gets to them (it runs every minute),
 * an expired record is taken over by a conditional update, so expiry is exact.
 */
export const openMongoIdempotencyStore = async (
  url: string,
  { collectionName = 'idempotency_keys' }: { collectionName?: string } = {},
): Promise<IdempotencyStore> => {
  const mongo = await acquireMongo(url);
  let keys: Collection<KeyRow>;
  try {
    keys = mongo.db.collection<KeyRow>(collectionName);
    await keys.createIndexes([
      { key: { scope: 1, key: 1 }, name: 'scope_key_unique', unique: true },
      { key: { expiresAt: 1 }, name: 'expiresAt_ttl', expireAfterSeconds: 0 },
    ]);
  } catch (error) {
    await mongo.release();
    throw error;
  }

  const claim: IdempotencyStore['claim'] = async ({ scope, key }, now, leaseUntil) => {
    // A few rounds at most: each lost round means another request changed the record in between.
    for (let round = 0; round < 5; round++) {
      const token = randomUUID();
      // A new object each time: insertOne adds an _id to the one it is given.
      const pending = (): KeyRow => ({
        scope,
        key,
        token,
        state: 'pending',
        expiresAt: new Date(leaseUntil),
      });
      try {
        await orUnavailable(keys.insertOne(pending()));
        return { outcome: 'claimed', token };
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      const existing = await orUnavailable(keys.findOne({ scope, key }));
      if (!existing) continue; // expired and removed in between
      if (existing.expiresAt.getTime() > now) {
        if (existing.state === 'pending') return { outcome: 'in-flight' };
        const response = existing.response!;
        return {
          outcome: 'completed',
          record: {
            fingerprint: existing.fingerprint!,
            response: {
              status: response.status,
              headers: response.headers,
              body: Buffer.from(response.body.value()),
            },
          },
        } satisfies Claim;
      }
      // Expired but not yet removed: take it over, unless another request just did.
      const taken = await orUnavailable(
        keys.replaceOne({ _id: existing._id, token: existing.token }, pending(), { upsert: false }),
      );
      if (taken.modifiedCount === 1) return { outcome: 'claimed', token };
    }
    throw new UnavailableError('The idempotency key is contended; retry');
  };

  return {
    kind: 'mongodb',
    claim,
    complete: async ({ scope, key }, token, { fingerprint, response }, expiresAt) => {
      const result = await orUnavailable(
        keys.updateOne(
          { scope, key, token, state: 'pending' },
          {
            $set: {
              state: 'completed',
              expiresAt: new Date(expiresAt),
              fingerprint,
              response: {
                status: response.status,
                headers: response.headers,
                body: new Binary(response.body),
              },
            },
          },
        ),
      );
      return result.modifiedCount === 1;
    },
    release: async ({ scope, key }, token) => {
      await orUnavailable(keys.deleteOne({ scope, key, token, state: 'pending' }));
    },
    ping: async () => {
      await orUnavailable(mongo.db.command({ ping: 1 }));
    },
    close: () => mongo.release(),
  };
};

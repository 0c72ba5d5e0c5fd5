import { randomFillSync } from 'node:crypto';

/** Crockford's base32 in lower case: no i, l, o or u, so ids read aloud and copy cleanly. */
const alphabet = '0123456789abcdefghjkmnpqrstvwxyz';

/** The `length` base-32 digits of `value` (an integer below 2 ** 53), most significant first. */
const encode = (value: number, length: number): string => {
  let out = '';
  for (let i = 0; i < length; i += 1) {
    out = alphabet[value % 32]! + out;
    value = Math.floor(value / 32);
  }
  return out;
};

/**
 * Random bytes drawn from a pool refilled 4 KiB at a time, as randomUUID does: one call into the system's
 * generator per 400 ids rather than one per id, which showed in a profile of creates.
 */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;
const randomChunk = (size: number): Buffer => {
  if (poolOffset + size > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  poolOffset += size;
  return pool.subarray(poolOffset - size, poolOffset);
};

/** 40 random bits as 8 base-32 digits (a 5-byte chunk: exact in a double). */
const randomDigits = (bytes: Buffer, at: number): string => encode(bytes.readUIntBE(at, 5), 8);

/**
 * A 26-character, time-ordered id (48 bits of milliseconds, 80 random bits, as in a ULID) behind a type
 * prefix such as `o_`. Ids of one kind sort by creation time, and never contain `-` or `_`, so they can be
 * parsed back out of stream names.
 */
export const newId = (prefix: string, now: Date = new Date()): string => {
  const random = randomChunk(10);
  return `${prefix}_${encode(now.getTime(), 10)}${randomDigits(random, 0)}${randomDigits(random, 5)}`;
};

export type IdGenerator = (prefix: string) => string;

export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

/** A tenant id: `t_` and up to 40 lower-case letters and digits (one pattern for the routes, the CLI and the document). */
export const tenantIdPattern = /^t_[0-9a-z]{1,40}$/;

import { randomBytes } from 'node:crypto';

/** Crockford's base32 in lower case: no i, l, o or u, so ids read aloud and copy cleanly. */
const alphabet = '0123456789abcdefghjkmnpqrstvwxyz';

const encode = (value: bigint, length: number): string => {
  let out = '';
  for (let i = 0; i < length; i += 1) {
    out = alphabet[Number(value & 31n)]! + out;
    value >>= 5n;
  }
  return out;
};

/**
 * A 26-character, time-ordered id (48 bits of milliseconds, 80 random bits, as in a ULID) behind a type
 * prefix such as `o_`. Ids of one kind sort by creation time, and never contain `-` or `_`, so they can be
 * parsed back out of stream names.
 */
export const newId = (prefix: string, now: Date = new Date()): string =>
  `${prefix}_${encode(BigInt(now.getTime()), 10)}${encode(BigInt(`0x${randomBytes(10).toString('hex')}`), 16)}`;

export type IdGenerator = (prefix: string) => string;

export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

/** A tenant id: `t_` and up to 40 lower-case letters and digits (one pattern for the routes, the CLI and the document). */
export const tenantIdPattern = /^t_[0-9a-z]{1,40}$/;

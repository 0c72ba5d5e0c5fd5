import { randomBytes } from 'node:crypto';

/**
 * Subscription secrets, in the Standard Webhooks form: `whsec_` and the base64 of the key's bytes.
 * - A secret the service generates is 32 random bytes in that form, shown once (at creation or rotation).
 * - A `whsec_` secret a tenant chooses is decoded as the standard says: its key is the decoded bytes.
 * - A plain secret (the first API accepted only these) keys with its UTF-8 bytes, as it always did; its
 *   standard form is `whsec_` and the base64 of those bytes, which is what the API answers with, so that
 *   the standard's libraries verify with the secret the API shows, whichever form the tenant chose.
 */
export const standardPrefix = 'whsec_';

/** The standard's bounds for a key (Standard Webhooks, "Signature scheme"). */
export const keyBytes = { min: 24, max: 64 } as const;
/** A plain secret's bounds, unchanged since the first API. */
export const plainLength = { min: 16, max: 256 } as const;

const base64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export const generateSecret = (): string => `${standardPrefix}${randomBytes(32).toString('base64')}`;

/**
 * Different characters (or bytes, for a `whsec_` key) a chosen secret needs at least: 16 spaces, 16 NULs
 * or 24 zero bytes have the length of a secret and none of its entropy. A random secret of the shortest
 * length has about 15 different ones.
 */
export const minDistinct = 8;

/** C0 and C1 controls and DEL: never typed into a secret on purpose, and invisible where it is pasted. */
const control = /\p{Cc}/u;

/** Why a plain secret is refused, or null. */
const plainProblem = (secret: string): string | null => {
  const characters = [...secret];
  if (characters.length < plainLength.min || characters.length > plainLength.max)
    return `must be ${standardPrefix} and the base64 of ${keyBytes.min} to ${keyBytes.max} random bytes, or a plain secret of ${plainLength.min} to ${plainLength.max} characters`;
  if (control.test(secret)) return 'must not contain control characters (such as NUL, tab or newline)';
  const distinct = new Set(characters).size;
  return distinct < minDistinct
    ? `must be random: at least ${minDistinct} different characters (this one has ${distinct}); leave it out to have one generated`
    : null;
};

/** Why a chosen secret is refused ("must …"), or null when it is acceptable. */
export const secretProblem = (secret: string): string | null => {
  if (!secret.startsWith(standardPrefix)) return plainProblem(secret);
  const encoded = secret.slice(standardPrefix.length);
  if (!base64.test(encoded)) return `must be ${standardPrefix} followed by standard base64 (RFC 4648 §4)`;
  const key = Buffer.from(encoded, 'base64');
  if (key.length < keyBytes.min || key.length > keyBytes.max)
    return `must encode ${keyBytes.min} to ${keyBytes.max} bytes after ${standardPrefix} (this one encodes ${key.length})`;
  const distinct = new Set(key).size;
  return distinct < minDistinct
    ? `must encode random bytes after ${standardPrefix}: at least ${minDistinct} different byte values (this one has ${distinct})`
    : null;
};

/** The HMAC key of a secret as stored: the decoded bytes of a `whsec_` secret, else its UTF-8 bytes. */
export const signingKey = (secret: string): Buffer =>
  secret.startsWith(standardPrefix)
    ? Buffer.from(secret.slice(standardPrefix.length), 'base64')
    : Buffer.from(secret, 'utf8');

/** The secret as the standard's libraries take it: `whsec_` and the base64 of its key. */
export const standardForm = (secret: string): string =>
  `${standardPrefix}${signingKey(secret).toString('base64')}`;

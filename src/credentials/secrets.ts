import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** 256 bits of randomness, URL-safe: the secret part of API keys, client secrets and refresh tokens. */
export const newSecret = (): string => randomBytes(32).toString('base64url');

/**
 * High-entropy secrets need no slow hash: SHA-256 is enough to make a stolen table useless, and keeps
 * the per-request check cheap. Passwords, which are guessable, use scrypt instead (passwords.ts).
 */
export const hashSecret = (secret: string): string => createHash('sha256').update(secret).digest('base64url');

export const sameSecret = (secret: string, expectedHash: string): boolean => {
  const given = Buffer.from(hashSecret(secret));
  const expected = Buffer.from(expectedHash);
  return given.length === expected.length && timingSafeEqual(given, expected);
};

export const constantTimeEqual = (a: string, b: string): boolean => {
  const left = Buffer.from(hashSecret(a));
  const right = Buffer.from(hashSecret(b));
  return timingSafeEqual(left, right);
};

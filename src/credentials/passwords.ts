import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Password hashes: scrypt from node:crypto, a 16-byte salt per password, and the parameters stored beside
 * the hash (`scrypt$N$r$p$salt$hash`), so they can be raised later without breaking old hashes.
 */
const defaults = { N: 2 ** 15, r: 8, p: 1 };
const keyLength = 32;

const derive = (password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> =>
  new Promise((resolve, reject) =>
    scrypt(
      password.normalize('NFKC'),
      salt,
      keyLength,
      { ...options, maxmem: 256 * 1024 * 1024 },
      (error, key) => (error ? reject(error) : resolve(key)),
    ),
  );

export const hashPassword = async (password: string, params = defaults): Promise<string> => {
  const salt = randomBytes(16);
  const key = await derive(password, salt, params);
  return ['scrypt', params.N, params.r, params.p, salt.toString('base64url'), key.toString('base64url')].join(
    '$',
  );
};

export const verifyPassword = async (password: string, stored: string): Promise<boolean> => {
  const [scheme, N, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(password, Buffer.from(salt, 'base64url'), {
    N: Number(N),
    r: Number(r),
    p: Number(p),
  });
  return key.length === expected.length && timingSafeEqual(key, expected);
};

let decoy: Promise<string> | undefined;

/** Verified against when the e-mail is unknown, so a failed login takes as long either way. */
export const decoyHash = (): Promise<string> =>
  (decoy ??= hashPassword('decoy password that matches nothing'));

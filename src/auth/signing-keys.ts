import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  type JsonWebKey,
} from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The keyring that signs access tokens: ES256 (P-256) keys named by `kid`. The newest active key signs;
 * every active key verifies, so tokens signed before a rotation stay valid until their key is retired.
 * It lives in one JSON file (SIGNING_KEYS_FILE, or DATA_DIR/signing-keys.json in development) that the
 * CLI rotates and retires, and that running services reload when it changes.
 */
export interface SigningKey {
  kid: string;
  createdAt: string;
  retiredAt: string | null;
  privateKeyPem: string;
}

export interface Keyring {
  signing: SigningKey;
  /** Active keys by kid, as PEM public keys for verification. */
  verifying: ReadonlyMap<string, string>;
  jwks: { keys: JsonWebKey[] };
  /**
   * Every key that may have signed an audit digest, retired ones included (with `retiredAt`): a digest
   * outlives the key that signed it, but a retired key must no longer verify tokens, so it leaves `jwks`.
   */
  digestJwks: { keys: JsonWebKey[] };
}

const publicJwk = (key: SigningKey): JsonWebKey => ({
  ...createPublicKey(createPrivateKey(key.privateKeyPem)).export({ format: 'jwk' }),
  kid: key.kid,
  alg: 'ES256',
  use: 'sig',
});

const newKey = (now: Date): SigningKey => {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    kid: `${now.toISOString().slice(0, 10)}-${randomBytes(4).toString('hex')}`,
    createdAt: now.toISOString(),
    retiredAt: null,
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
};

export const readKeys = (file: string): SigningKey[] =>
  existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { keys: SigningKey[] }).keys : [];

/** Writes atomically (rename), with owner-only permissions: the file holds private keys. */
export const writeKeys = (file: string, keys: SigningKey[]): void => {
  mkdirSync(dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify({ keys }, null, 2), { mode: 0o600 });
  renameSync(temporary, file);
};

export const rotateKeys = (file: string, now = new Date()): SigningKey => {
  const key = newKey(now);
  writeKeys(file, [...readKeys(file), key]);
  return key;
};

export const retireKey = (file: string, kid: string, now = new Date()): boolean => {
  const keys = readKeys(file);
  const target = keys.find((key) => key.kid === kid && key.retiredAt === null);
  if (!target) return false;
  if (keys.filter((key) => key.retiredAt === null).length === 1) {
    throw new Error('Refusing to retire the only active key: rotate first');
  }
  writeKeys(
    file,
    keys.map((key) => (key === target ? { ...key, retiredAt: now.toISOString() } : key)),
  );
  return true;
};

export const keyringOf = (keys: readonly SigningKey[]): Keyring => {
  const active = keys.filter((key) => key.retiredAt === null);
  const signing = active.at(-1);
  if (!signing) throw new Error('The signing keyring has no active key');
  const publicKeys = active.map((key) => ({
    kid: key.kid,
    publicKey: createPublicKey(createPrivateKey(key.privateKeyPem)),
  }));
  return {
    signing,
    verifying: new Map(
      publicKeys.map(({ kid, publicKey }) => [
        kid,
        publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      ]),
    ),
    jwks: { keys: active.map(publicJwk) },
    digestJwks: {
      keys: keys.map((key) => ({
        ...publicJwk(key),
        ...(key.retiredAt ? { retiredAt: key.retiredAt } : {}),
      })),
    },
  };
};

/** Loads the keyring, creating a first key when the file does not exist yet (development only). */
export const loadKeyring = (file: string, { create }: { create: boolean }): Keyring => {
  if (!existsSync(file)) {
    if (!create)
      throw new Error(`SIGNING_KEYS_FILE ${file} does not exist; create it with "obs keys rotate"`);
    rotateKeys(file);
  }
  return keyringOf(readKeys(file));
};

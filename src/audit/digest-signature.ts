import {
  createPrivateKey,
  createPublicKey,
  sign,
  verify,
  type JsonWebKey,
  type KeyObject,
} from 'node:crypto';
import type { SigningKey } from '../auth/signing-keys.js';
import { canonicalJson } from '../eventstore/hash-chain.js';

/**
 * A digest's signature: a compact JWS (RFC 7515), ES256 with a key of the token keyring, over the canonical
 * JSON of what the digest commits to (docs/auditors.md#6-digests-and-proofs). Its payload has no `iss`, `aud`
 * or `sub`, so no access-token verifier takes it for a token.
 */
export interface DigestPayload {
  tenantId: string;
  position: number;
  size: number;
  logRoot: string;
  headsRoot: string;
  streams: number;
  recordedAt: string;
}

export const digestJwsType = 'obs-digest';

/** JSON with the keys sorted, no spaces: the payload's bytes, which an auditor can rebuild from the fields. */
export const canonicalPayload = (payload: DigestPayload): string => canonicalJson(payload);

const base64url = (data: string | Buffer): string => Buffer.from(data).toString('base64url');

export const signDigest = (
  key: Pick<SigningKey, 'kid' | 'privateKeyPem'>,
  payload: DigestPayload,
): string => {
  const header = base64url(JSON.stringify({ alg: 'ES256', kid: key.kid, typ: digestJwsType }));
  const signingInput = `${header}.${base64url(canonicalPayload(payload))}`;
  // JWS wants r ‖ s (64 bytes), not the DER that node signs by default.
  const signature = sign('sha256', Buffer.from(signingInput), {
    key: createPrivateKey(key.privateKeyPem),
    dsaEncoding: 'ieee-p1363',
  });
  return `${signingInput}.${base64url(signature)}`;
};

export type SignatureCheck = 'ok' | 'malformed' | 'unknown key' | 'bad signature' | 'payload mismatch';

/** Public keys by kid, from the keyring's digest JWKS (retired keys included: they signed older digests). */
export const digestKeysOf = (jwks: { keys: readonly JsonWebKey[] }): Map<string, KeyObject> =>
  new Map(
    jwks.keys.flatMap((jwk) =>
      typeof jwk.kid === 'string' ? [[jwk.kid, createPublicKey({ key: jwk, format: 'jwk' })] as const] : [],
    ),
  );

/** What `obs audit verify` checks of a stored digest's JWS: its key, its signature, and that it says what the digest says. */
export const checkDigestSignature = (
  jws: string,
  payload: DigestPayload,
  keys: ReadonlyMap<string, KeyObject>,
): SignatureCheck => {
  const [header, body, signature, ...rest] = jws.split('.');
  if (header === undefined || body === undefined || signature === undefined || rest.length > 0)
    return 'malformed';
  let kid: unknown;
  try {
    const parsed = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as {
      alg?: unknown;
      kid?: unknown;
    };
    if (parsed.alg !== 'ES256') return 'malformed';
    kid = parsed.kid;
  } catch {
    return 'malformed';
  }
  const key = typeof kid === 'string' ? keys.get(kid) : undefined;
  if (!key) return 'unknown key';
  const signed = verify(
    'sha256',
    Buffer.from(`${header}.${body}`),
    { key, dsaEncoding: 'ieee-p1363' },
    Buffer.from(signature, 'base64url'),
  );
  if (!signed) return 'bad signature';
  return Buffer.from(body, 'base64url').toString('utf8') === canonicalPayload(payload)
    ? 'ok'
    : 'payload mismatch';
};

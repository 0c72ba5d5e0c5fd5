import { createHash, createPublicKey, verify, type JsonWebKey } from 'node:crypto';

/**
 * Checking the service's signed digests and RFC 9162 proofs without trusting it (docs/auditors.md, "Digests
 * and proofs"): the tenant's log tree has one leaf per exported event, in the export's order, whose input is
 * the event's `hash` as 32 bytes. Hashes are lowercase hex throughout. Sizes are counts of leaves, well below
 * 2^53, so plain numbers are halved with Math.floor rather than shifted (`>>` would cut them to 32 bits).
 */

const sha256 = (...parts: Buffer[]): Buffer => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
};

const bytes = (hex: string): Buffer => {
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new TypeError(`not a hex SHA-256: ${hex}`);
  return Buffer.from(hex, 'hex');
};

const leafPrefix = Buffer.of(0x00);
const nodePrefix = Buffer.of(0x01);

/** SHA-256(0x00 ‖ the event's hash): the leaf of one exported event. */
export const leafHashOf = (eventHashHex: string): string =>
  sha256(leafPrefix, bytes(eventHashHex)).toString('hex');

const node = (left: Buffer, right: Buffer): Buffer => sha256(nodePrefix, left, right);

/**
 * The root of the log tree, built while the export is read: add each event's hash in the file's order. Holds
 * one node per bit of the size (the roots of the full subtrees), so a million events need about 20.
 */
export const logRoot = () => {
  const subtrees: Buffer[] = [];
  let size = 0;
  return {
    add: (eventHashHex: string): void => {
      let merged = sha256(leafPrefix, bytes(eventHashHex));
      // As a binary counter carries: each trailing 1 bit of the size is a full subtree to merge with.
      for (let carry = size; carry % 2 === 1; carry = Math.floor(carry / 2))
        merged = node(subtrees.pop()!, merged);
      subtrees.push(merged);
      size += 1;
    },
    root: (): string => {
      let root: Buffer | null = null;
      for (let index = subtrees.length - 1; index >= 0; index -= 1)
        root = root ? node(subtrees[index]!, root) : subtrees[index]!;
      return (root ?? sha256()).toString('hex');
    },
    get size() {
      return size;
    },
  };
};

const half = (n: number) => Math.floor(n / 2);
const odd = (n: number) => n % 2 === 1;
const isHash = (hex: unknown) => typeof hex === 'string' && /^[0-9a-f]{64}$/.test(hex);

const isPowerOfTwo = (n: number): boolean => {
  let rest = n;
  while (rest > 1 && !odd(rest)) rest = half(rest);
  return rest === 1;
};

/**
 * RFC 9162 §2.1.3.2: is the leaf at `index` in the tree of `size` leaves whose root is `rootHex`? `leaf` is the
 * event's hash (`{ eventHash }`, as the export and the proof give it) or the leaf hash itself (`{ leafHash }`).
 */
export const verifyInclusion = (
  leaf: { eventHash: string } | { leafHash: string },
  index: number,
  size: number,
  path: readonly string[],
  rootHex: string,
): boolean => {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return false;
  const given = 'leafHash' in leaf ? leaf.leafHash : leaf.eventHash;
  if (![...path, rootHex, given].every(isHash)) return false;
  let fn = index;
  let sn = size - 1;
  let r = bytes('leafHash' in leaf ? leaf.leafHash : leafHashOf(leaf.eventHash));
  for (const hex of path) {
    if (sn === 0) return false;
    const p = bytes(hex);
    if (odd(fn) || fn === sn) {
      r = node(p, r);
      while (!odd(fn) && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else {
      r = node(r, p);
    }
    [fn, sn] = [half(fn), half(sn)];
  }
  return sn === 0 && r.equals(bytes(rootHex));
};

/** RFC 9162 §2.1.4.2: does the tree of `size2` leaves (root `root2Hex`) extend that of `size1` (`root1Hex`)? */
export const verifyConsistency = (
  size1: number,
  size2: number,
  root1Hex: string,
  root2Hex: string,
  path: readonly string[],
): boolean => {
  if (!Number.isSafeInteger(size1) || !Number.isSafeInteger(size2) || size1 < 0 || size1 > size2)
    return false;
  if (size1 === size2) return path.length === 0 && root1Hex === root2Hex;
  // The empty tree is extended by every tree; the RFC proves only from one leaf on.
  if (size1 === 0) return path.length === 0;
  if (path.length === 0) return false;
  if (![...path, root1Hex, root2Hex].every(isHash)) return false;
  const nodes = path.map(bytes);
  // A first tree that is a full subtree of the second is the proof's own starting node.
  if (isPowerOfTwo(size1)) nodes.unshift(bytes(root1Hex));
  let fn = size1 - 1;
  let sn = size2 - 1;
  while (odd(fn)) [fn, sn] = [half(fn), half(sn)];
  let fr = nodes[0]!;
  let sr = nodes[0]!;
  for (const c of nodes.slice(1)) {
    if (sn === 0) return false;
    if (odd(fn) || fn === sn) {
      fr = node(c, fr);
      sr = node(c, sr);
      while (!odd(fn) && fn !== 0) [fn, sn] = [half(fn), half(sn)];
    } else {
      sr = node(sr, c);
    }
    [fn, sn] = [half(fn), half(sn)];
  }
  return sn === 0 && fr.equals(bytes(root1Hex)) && sr.equals(bytes(root2Hex));
};

/** A digest as `GET …/audit/digests` gives it. */
export interface SignedDigest {
  tenantId: string;
  position: number;
  size: number;
  logRoot: string;
  headsRoot: string;
  streams: number;
  recordedAt: string;
  signature: string;
}

export type DigestSignatureCheck =
  | { ok: true; kid: string }
  | {
      ok: false;
      reason: 'malformed' | 'unknown-key' | 'retired-key' | 'invalid-signature' | 'payload-mismatch';
    };

/** The bytes the signature covers: the digest's fields as JSON with the keys sorted and no spaces. */
export const digestPayload = (digest: SignedDigest): string =>
  JSON.stringify({
    headsRoot: digest.headsRoot,
    logRoot: digest.logRoot,
    position: digest.position,
    recordedAt: digest.recordedAt,
    size: digest.size,
    streams: digest.streams,
    tenantId: digest.tenantId,
  });

const jsonOf = (part: string): unknown => {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
};

/** ES256 over the JWS signing input; a key or a signature node cannot read is simply not valid. */
const signedBy = (jwk: JsonWebKey, signingInput: string, signature: string): boolean => {
  try {
    const key = createPublicKey({ key: jwk, format: 'jwk' });
    const raw = Buffer.from(signature, 'base64url');
    return verify('sha256', Buffer.from(signingInput), { key, dsaEncoding: 'ieee-p1363' }, raw);
  } catch {
    return false;
  }
};

/**
 * Checks a digest's `signature`, a compact JWS: ES256 by the key its `kid` names in `jwks` (the service's
 * `/.well-known/digest-keys.json`, or `jwks.json` while the key is active), and a payload that says exactly
 * what the digest's fields say. A key with `retiredAt` verifies only digests recorded before it.
 */
export const verifyDigestSignature = (
  digest: SignedDigest,
  jwks: { keys: readonly JsonWebKey[] },
): DigestSignatureCheck => {
  const parts = typeof digest.signature === 'string' ? digest.signature.split('.') : [];
  const [header, payload, signature] = parts;
  if (parts.length !== 3 || header === undefined || payload === undefined || signature === undefined)
    return { ok: false, reason: 'malformed' };
  const fields = jsonOf(header) as { alg?: unknown; kid?: unknown } | undefined;
  if (fields?.alg !== 'ES256' || typeof fields.kid !== 'string') return { ok: false, reason: 'malformed' };
  const jwk = jwks.keys.find((key) => key.kid === fields.kid && key.kty === 'EC' && key.crv === 'P-256');
  if (!jwk) return { ok: false, reason: 'unknown-key' };
  if (typeof jwk.retiredAt === 'string' && !(Date.parse(digest.recordedAt) < Date.parse(jwk.retiredAt)))
    return { ok: false, reason: 'retired-key' };
  if (!signedBy(jwk, `${header}.${payload}`, signature)) return { ok: false, reason: 'invalid-signature' };
  return Buffer.from(payload, 'base64url').toString('utf8') === digestPayload(digest)
    ? { ok: true, kid: fields.kid }
    : { ok: false, reason: 'payload-mismatch' };
};

import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import type { IdempotencyId, StoredResponse } from './idempotency-store.js';

const version = 1;
const ivBytes = 12;
const tagBytes = 16;

const subkey = (secret: string, purpose: string) =>
  Buffer.from(hkdfSync('sha256', secret, 'idempotency', purpose, 32));

/** What a sealed body is bound to: its record and everything replayed with it. */
const associatedData = (id: IdempotencyId, fingerprint: string, response: StoredResponse) =>
  Buffer.from(
    JSON.stringify([
      id.scope,
      id.key,
      fingerprint,
      response.status,
      Object.entries(response.headers).sort(([a], [b]) => (a < b ? -1 : 1)),
    ]),
  );

/**
 * The idempotency records' secrets, under IDEMPOTENCY_SECRET_KEY. A kept response body is sealed with
 * AES-256-GCM (`<version><iv><tag><ciphertext>`), bound to its record, so the file or collection never holds
 * an API key secret, a `clientSecret` or an `adminApiKey` in clear, and a body cannot be moved to another
 * record. The request fingerprint is an HMAC rather than a bare SHA-256: a body with a password in it
 * (POST …/users) would otherwise leave a hash to guess the password against.
 */
export const idempotencySeal = (secret: string) => {
  const sealKey = subkey(secret, 'response body');
  const fingerprintKey = subkey(secret, 'request fingerprint');
  return {
    fingerprint: (binding: unknown, body: Buffer): string =>
      createHmac('sha256', fingerprintKey)
        .update(JSON.stringify(binding))
        .update('\n')
        .update(body)
        .digest('hex'),

    seal: (id: IdempotencyId, fingerprint: string, response: StoredResponse): StoredResponse => {
      const iv = randomBytes(ivBytes);
      const cipher = createCipheriv('aes-256-gcm', sealKey, iv);
      cipher.setAAD(associatedData(id, fingerprint, response));
      const ciphertext = Buffer.concat([cipher.update(response.body), cipher.final()]);
      return { ...response, body: Buffer.concat([Buffer.of(version), iv, cipher.getAuthTag(), ciphertext]) };
    },

    /** The response as it was sealed; null when it was sealed under another key or was altered. */
    open: (id: IdempotencyId, fingerprint: string, sealed: StoredResponse): StoredResponse | null => {
      const { body } = sealed;
      if (body.length < 1 + ivBytes + tagBytes || body[0] !== version) return null;
      try {
        const decipher = createDecipheriv('aes-256-gcm', sealKey, body.subarray(1, 1 + ivBytes));
        decipher.setAuthTag(body.subarray(1 + ivBytes, 1 + ivBytes + tagBytes));
        decipher.setAAD(associatedData(id, fingerprint, sealed));
        const plain = Buffer.concat([
          decipher.update(body.subarray(1 + ivBytes + tagBytes)),
          decipher.final(),
        ]);
        return { ...sealed, body: plain };
      } catch {
        return null;
      }
    },
  };
};

export type IdempotencySeal = ReturnType<typeof idempotencySeal>;

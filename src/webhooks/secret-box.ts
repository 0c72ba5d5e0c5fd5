import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Webhook secrets must be kept to sign deliveries, but auditors read the event history: the secret goes
 * into events only sealed with AES-256-GCM under WEBHOOK_SECRET_KEY, as `v1.<iv>.<tag>.<ciphertext>`.
 */
const keyOf = (secret: string) => createHash('sha256').update(secret).digest();

export const seal = (plaintext: string, key: string): string => {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(key), iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), ciphertext]
    .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
    .join('.');
};

export const open = (sealed: string, key: string): string => {
  const [version, iv, tag, ciphertext] = sealed.split('.');
  if (version !== 'v1' || !iv || !tag || ciphertext === undefined) throw new Error('Not a sealed secret');
  const decipher = createDecipheriv('aes-256-gcm', keyOf(key), Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString(
    'utf8',
  );
};

import { createHash } from 'node:crypto';

/** The lower-case hex SHA-256 of the bytes: a blob's name. */
export const sha256Of = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** A lower-case hex SHA-256, and nothing that could name a path or a query operator. */
export const isSha256 = (text: string): boolean => /^[0-9a-f]{64}$/.test(text);

/** A medium's id: `m_` and the first 26 hex digits of its SHA-256, so the same image attached twice is one medium. */
export const mediaIdOf = (sha256: string): string => `m_${sha256.slice(0, 26)}`;

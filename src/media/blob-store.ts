/**
 * Where image bytes live: content-addressed by SHA-256, so the same image stored twice is stored once, and
 * a stored blob never changes. Events record only the hash and what was measured from the bytes.
 */
export interface BlobStore {
  readonly kind: 'files' | 'gridfs' | 'postgres';
  /** Stores the bytes under their SHA-256 (lower-case hex); storing existing bytes again is a no-op. */
  put(sha256: string, bytes: Buffer, contentType: string): Promise<void>;
  /** The bytes, or null when no blob has that hash. */
  get(sha256: string): Promise<Buffer | null>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

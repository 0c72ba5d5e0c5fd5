import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { access, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { BlobStore } from './blob-store.js';
import { isSha256, sha256Of } from './hash.js';

/** Temporary files older than this are left over from a crash and removed when the store opens. */
const staleTempMs = 60 * 60_000;

const assertHash = (sha256: string): void => {
  // The hash becomes a file name: anything else could name a path outside the store.
  if (!isSha256(sha256)) throw new Error(`Not a lower-case hex SHA-256: ${sha256}`);
};

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';

const fsyncDirectory = async (dir: string): Promise<void> => {
  // Makes the rename durable. Some platforms cannot open a directory for fsync; the rename still happened.
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // best effort
  }
};

/**
 * The embedded blob store: one file per blob under `<dir>/<first two hex digits>/<sha256>`. A blob is
 * written to `<dir>/tmp/` first, flushed, and renamed into place, so a crash never leaves a half blob
 * under a hash name; a temporary file a crash left behind is removed at the next start.
 */
export const openFileBlobs = (dir: string): BlobStore => {
  const tmpDir = join(dir, 'tmp');
  mkdirSync(tmpDir, { recursive: true, mode: 0o700 });
  for (const name of readdirSync(tmpDir)) {
    const file = join(tmpDir, name);
    try {
      if (Date.now() - statSync(file).mtimeMs > staleTempMs) rmSync(file, { force: true });
    } catch {
      // another process removed or renamed it
    }
  }
  const pathOf = (sha256: string) => join(dir, sha256.slice(0, 2), sha256);
  const exists = async (file: string) => {
    try {
      await stat(file);
      return true;
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
  };

  return {
    kind: 'files',

    put: async (sha256, bytes) => {
      assertHash(sha256);
      if (sha256Of(bytes) !== sha256) throw new Error(`The bytes do not hash to ${sha256}`);
      const target = pathOf(sha256);
      // Content-addressed: a blob with this name already holds exactly these bytes.
      if (await exists(target)) return;
      const temp = join(tmpDir, `${sha256}.${randomUUID()}.tmp`);
      try {
        const handle = await open(temp, 'wx', 0o600);
        try {
          await handle.writeFile(bytes);
          await handle.sync();
        } finally {
          await handle.close();
        }
        const shard = join(dir, sha256.slice(0, 2));
        await mkdir(shard, { recursive: true, mode: 0o700 });
        // Atomic on one file system: readers see no file or the whole file. A racing put of the same
        // bytes renames identical content over it, which changes nothing.
        await rename(temp, target);
        await fsyncDirectory(shard);
      } catch (error) {
        await rm(temp, { force: true });
        throw error;
      }
    },

    get: async (sha256) => {
      if (!isSha256(sha256)) return null;
      try {
        return await readFile(pathOf(sha256));
      } catch (error) {
        if (isMissing(error)) return null;
        throw error;
      }
    },

    ping: async () => {
      await access(tmpDir);
    },

    close: async () => {
      // Nothing is held open between calls.
    },
  };
};

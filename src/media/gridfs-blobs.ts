import { GridFSBucket, MongoServerError, ObjectId } from 'mongodb';
import { once } from 'node:events';
import { acquireMongo, isConnectionFailure, orUnavailable, unreachable } from '../mongodb/client.js';
import type { BlobStore } from './blob-store.js';
import { isSha256, sha256Of } from './hash.js';

const DUPLICATE_KEY = 11000;

/**
 * The production blob store: MongoDB GridFS, bucket `blobs` (collections `blobs.files` and `blobs.chunks`),
 * each blob one GridFS file named by its SHA-256 with `metadata.contentType`.
 *
 * GridFS writes the chunks first and the files document last, and reads only through a files document, so
 * a put that dies half way leaves unreachable chunks, never a half blob. Each upload gets a fresh id; a
 * unique index on `filename` makes the second of two racing puts of the same bytes fail on its files
 * document, which counts as done: it removes its own chunks, and the first upload's blob stands.
 */
export const openGridFsBlobs = async (
  url: string,
  { bucketName = 'blobs' }: { bucketName?: string } = {},
): Promise<BlobStore> => {
  const mongo = await acquireMongo(url);
  const { db } = mongo;
  const bucket = new GridFSBucket(db, { bucketName });
  const files = db.collection(`${bucketName}.files`);
  const chunks = db.collection(`${bucketName}.chunks`);
  try {
    // Idempotent; GridFS adds its own {filename, uploadDate} and {files_id, n} indexes on the first upload.
    await files.createIndex({ filename: 1 }, { unique: true, name: 'filename_unique' });
  } catch (error) {
    await mongo.release();
    throw error;
  }

  const findFile = (sha256: string) => orUnavailable(bucket.find({ filename: sha256 }, { limit: 1 }).next());

  return {
    kind: 'gridfs',

    put: async (sha256, bytes, contentType) => {
      if (!isSha256(sha256)) throw new Error(`Not a lower-case hex SHA-256: ${sha256}`);
      if (sha256Of(bytes) !== sha256) throw new Error(`The bytes do not hash to ${sha256}`);
      if (await findFile(sha256)) return;
      const id = new ObjectId();
      const upload = bucket.openUploadStreamWithId(id, sha256, { metadata: { contentType } });
      try {
        upload.end(bytes);
        await once(upload, 'finish');
      } catch (error) {
        // Whatever happened, the chunks under this upload's own id belong to no blob.
        await chunks.deleteMany({ files_id: id }).catch(() => undefined);
        if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) return;
        throw isConnectionFailure(error) ? unreachable(error) : error;
      }
    },

    get: async (sha256) => {
      if (!isSha256(sha256)) return null;
      const file = await findFile(sha256);
      if (!file) return null;
      const parts: Buffer[] = [];
      const download = bucket.openDownloadStream(file._id);
      await orUnavailable(
        (async () => {
          for await (const part of download) parts.push(part as Buffer);
        })(),
      );
      return Buffer.concat(parts);
    },

    ping: async () => {
      await orUnavailable(db.command({ ping: 1 }));
    },

    close: () => mongo.release(),
  };
};

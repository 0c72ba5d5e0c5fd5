import { join } from 'node:path';
import { streamHeadsProjection, type StreamHeadDoc } from '../../projections/stream-heads.js';
import { recordDigest } from '../../src/audit/digest.js';
import { loadKeyring } from '../../src/auth/signing-keys.js';
import { listAll } from '../../src/readmodels/list-all.js';
import type { TestServer } from './server.js';
import { eventually } from './wait.js';

/** Records a digest as the hourly job would, once the stream heads have seen the tenant's newest event. */
export const digestNow = async (server: TestServer, tenantId: string) => {
  const { eventStore, readModels } = server.stores;
  const [newest] = (await eventStore.readAllBackward({ maxCount: 1, filter: { tenantId } })).events;
  await eventually(async () => {
    const heads = await listAll<StreamHeadDoc, 'position'>(
      readModels,
      streamHeadsProjection.collection.name,
      {
        tenantId,
        sortField: 'position',
        pageSize: 1000,
      },
    );
    return heads.some((head) => head.position >= newest!.position) ? true : undefined;
  });
  const { signing } = loadKeyring(join(server.dataDir, 'signing-keys.json'), { create: false });
  return (await recordDigest(eventStore, readModels, tenantId, new Date(), signing))!;
};

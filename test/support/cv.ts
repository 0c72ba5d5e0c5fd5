import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { handleCommand } from '../../src/core/command-handler.js';
import { streamName } from '../../src/core/streams.js';
import { mediaIdOf, sha256Of } from '../../src/media/hash.js';
import { observationDecider } from '../../src/observations/decider.js';
import type { MediaContentType } from '../../src/observations/observation.js';
import type { Stores } from '../../src/stores.js';
import { sleep } from './wait.js';
import { request } from './server.js';

/** A tenant's view of a running service for CV tests: its API under one key. */
export const cvTenant = (baseUrl: string, stores: Stores | null, tenantId: string, apiKey: string) => {
  const api = (path: string, init: Parameters<typeof request>[1] = {}) =>
    request(`${baseUrl}/v1/tenants/${tenantId}${path}`, {
      ...init,
      headers: { 'X-API-Key': apiKey, ...init.headers },
    });

  const observe = async (notes = 'a fox') => {
    const response = await api('/observations', {
      method: 'POST',
      body: { observedAt: '2026-05-01T09:30:00Z', notes },
    });
    expect(response.status, JSON.stringify(response.body)).to.equal(201);
    return response.body.id as string;
  };

  /** Uploads an image through the media route, as a client would. */
  const upload = async (observationId: string, bytes: Buffer) => {
    const response = await fetch(`${baseUrl}/v1/tenants/${tenantId}/observations/${observationId}/media`, {
      method: 'POST',
      body: bytes,
      headers: { 'X-API-Key': apiKey, 'content-type': 'application/octet-stream' },
    });
    const body = (await response.json()) as { id: string; sha256: string };
    expect(response.status, JSON.stringify(body)).to.be.oneOf([200, 201]);
    return body;
  };

  /**
   * Attaches bytes the media route would refuse (a truncated image) or never stored (`store: false`),
   * straight through the blob store and the observation's decider.
   */
  const attachDirectly = async (
    observationId: string,
    bytes: Buffer,
    { store = true, contentType = 'image/jpeg' }: { store?: boolean; contentType?: MediaContentType } = {},
  ) => {
    if (!stores) throw new Error('attachDirectly needs the stores');
    const sha256 = sha256Of(bytes);
    if (store) await stores.blobs.put(sha256, bytes, contentType);
    const media = { id: mediaIdOf(sha256), sha256, contentType, size: bytes.length, width: 640, height: 480 };
    await handleCommand(
      stores.eventStore,
      observationDecider,
      streamName('observation', tenantId, observationId),
      { type: 'AttachMedia', media },
      {
        tenantId,
        actor: 'test',
        correlationId: randomUUID(),
        causationId: null,
        now: new Date(),
        newEventId: () => randomUUID(),
      },
    );
    return media;
  };

  const submit = async (body: Record<string, unknown>) => {
    const response = await api('/cv-jobs', { method: 'POST', body });
    expect(response.status, JSON.stringify(response.body)).to.equal(202);
    return response.body as { id: string; status: string };
  };

  /** The job once it has completed or failed, polled every `everyMs` (politely: lists are rate limited). */
  const finished = async (jobId: string, timeoutMs = 15_000, everyMs = 100) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const response = await api(`/cv-jobs/${jobId}`);
      expect(response.status, JSON.stringify(response.body)).to.equal(200);
      if (['completed', 'failed'].includes(response.body.status as string)) return response.body;
      if (Date.now() > deadline) throw new Error(`job ${jobId} is still ${response.body.status}`);
      await sleep(everyMs);
    }
  };

  return { tenantId, api, observe, upload, attachDirectly, submit, finished };
};

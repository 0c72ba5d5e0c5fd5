import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RecordedEvent } from '../../src/core/events.js';
import { eventHash, genesisHash } from '../../src/eventstore/hash-chain.js';
import { openPostgresEventStore } from '../../src/eventstore/postgres.js';
import { eventually, uniqueTenant } from '../support/events.js';
import { describePostgres } from '../support/postgres.js';

const srcDir = fileURLToPath(new URL('../../src/', import.meta.url));

/**
 * test/e2e/crash.test.ts on PostgreSQL: a process appending three events per stream from four connections
 * at once is killed with SIGKILL; every append it saw committed is whole, no append is half there, and the
 * chain of every stream verifies. The server rolls back what was in flight; the positions those appends
 * had taken stay unused, which no reader waits for.
 */
const writerScript = `
  import { randomUUID } from 'node:crypto';
  import { openPostgresEventStore } from '${srcDir}eventstore/postgres.ts';
  const { URL: url, TENANT: tenantId } = process.env;
  const store = await openPostgresEventStore(url, { poolSize: 4 });
  const event = (n) => ({
    id: randomUUID(), type: 'Appended', data: { n, padding: 'x'.repeat(512) },
    metadata: { tenantId, actor: 'test', correlationId: randomUUID(), causationId: null,
                occurredAt: new Date().toISOString(), schemaVersion: 1 },
  });
  let next = 0;
  const loop = async () => {
    for (;;) {
      const i = next++;
      await store.appendToStream('crash-' + tenantId + '_s' + i, [event(1), event(2), event(3)], 'no_stream');
      process.stdout.write(i + '\\n');
    }
  };
  for (let n = 0; n < 4; n += 1) void loop();
`;

describePostgres('PostgreSQL: a process killed while appending', (url) => {
  it('loses no committed event, leaves no half-written append, and every chain verifies', async function () {
    this.timeout(60_000);
    const tenant = uniqueTenant();
    let stdout = '';
    const writer = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', writerScript], {
      env: { ...process.env, URL: url, TENANT: tenant },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    writer.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise((resolve) => writer.once('exit', resolve));
    try {
      await eventually(() => stdout.split('\n').length > 300, 30_000);
    } finally {
      writer.kill('SIGKILL');
      await exited;
    }
    const acknowledged = stdout.split('\n').filter(Boolean).map(Number);

    const store = await openPostgresEventStore(url);
    try {
      const { events } = await store.readAll({ filter: { tenantId: tenant }, maxCount: 1_000_000 });
      const streams = new Map<string, RecordedEvent[]>();
      for (const event of events)
        streams.set(event.streamName, [...(streams.get(event.streamName) ?? []), event]);
      for (const i of acknowledged) {
        expect(streams.get(`crash-${tenant}_s${i}`), `stream ${i}`).to.have.length(3);
      }
      expect([...streams.values()].every((stream) => stream.length === 3)).to.equal(true);
      expect(streams.size).to.be.at.least(acknowledged.length);
      for (const stream of streams.values()) {
        let previous = genesisHash;
        for (const event of stream) {
          expect(event.hash).to.equal(eventHash(previous, event));
          previous = event.hash!;
        }
      }
      // Nothing in flight is left to wait for: the head is the newest committed event.
      expect(await store.headPosition()).to.be.at.least(events.at(-1)!.position);
    } finally {
      await store.close();
    }
  });
});

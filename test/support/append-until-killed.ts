// Appends three events per stream, forever, and prints each stream's number once its append has committed.
// The crash test SIGKILLs this process mid-stream and checks what survived.
import { randomUUID } from 'node:crypto';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';

const store = openSqliteEventStore(process.argv[2]!);
const event = (n: number) => ({
  id: randomUUID(),
  type: 'Appended',
  data: { n, padding: 'x'.repeat(512) },
  metadata: {
    tenantId: 't_crash',
    actor: 'test',
    correlationId: randomUUID(),
    causationId: null,
    occurredAt: new Date().toISOString(),
    schemaVersion: 1,
  },
});

const loop = async (i: number): Promise<void> => {
  await store.appendToStream(`crash-t_crash_s${i}`, [event(1), event(2), event(3)], 'no_stream');
  process.stdout.write(`${i}\n`);
  setImmediate(() => void loop(i + 1));
};
void loop(0);

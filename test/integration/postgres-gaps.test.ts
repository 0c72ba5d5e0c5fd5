import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { EventStore } from '../../src/eventstore/port.js';
import { openPostgresEventStore } from '../../src/eventstore/postgres.js';
import { eventually, uniqueTenant } from '../support/events.js';
import { describePostgres } from '../support/postgres.js';

const srcDir = fileURLToPath(new URL('../../src/', import.meta.url));

/**
 * The known trap of a bigserial position: it is taken at insert, but transactions commit in another
 * order, so a reader that reads up to the highest position it sees skips an event that commits later with
 * a lower one. Several processes append at once, each from several connections, in appends of 1 to 10
 * events; a catch-up subscriber must get every event, once, in position order.
 */
const total = 100_000;
const processes = 3;
const connectionsPerProcess = 8;

/** One appender process: `count` events of the tenant from `connections` append loops at once. */
const appenderScript = `
  import { randomUUID } from 'node:crypto';
  import { openPostgresEventStore } from '${srcDir}eventstore/postgres.ts';
  const { URL: url, TENANT: tenantId, COUNT, CONNECTIONS, NAME } = process.env;
  const store = await openPostgresEventStore(url, { poolSize: Number(CONNECTIONS) });
  let left = Number(COUNT);
  let streams = 0;
  const event = (type) => () => ({
    id: randomUUID(), type, data: {},
    metadata: { tenantId, actor: 'test', correlationId: randomUUID(), causationId: null,
                occurredAt: new Date().toISOString(), schemaVersion: 1 },
  });
  const loop = async () => {
    while (left > 0) {
      const size = Math.min(left, 1 + Math.floor(Math.random() * 10));
      left -= size;
      streams += 1;
      // Two types, a commit of one or the other: a subscriber of one type skips the other's commits.
      const type = Math.random() < 0.5 ? 'Gap' : 'Other';
      await store.appendToStream('gap-' + tenantId + '_' + NAME + '-' + streams,
        Array.from({ length: size }, event(type)), 'no_stream');
    }
  };
  await Promise.all(Array.from({ length: Number(CONNECTIONS) }, loop));
  await store.close();
`;

const appender = (url: string, tenant: string, name: string, count: number): ChildProcess =>
  spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', appenderScript], {
    env: {
      ...process.env,
      URL: url,
      TENANT: tenant,
      COUNT: String(count),
      CONNECTIONS: String(connectionsPerProcess),
      NAME: name,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });

const exited = (child: ChildProcess): Promise<number | null> =>
  new Promise((resolve) => child.once('exit', (code) => resolve(code)));

describePostgres('PostgreSQL event store under concurrent appenders', (url) => {
  let store: EventStore;
  beforeEach(async () => {
    store = await openPostgresEventStore(url);
  });
  afterEach(() => store.close());

  it(`delivers all ${total} events of ${processes} appending processes to a catch-up subscriber, with no gap`, async function () {
    this.timeout(120_000);
    const tenant = uniqueTenant();
    const positions: number[] = [];
    const ids = new Set<string>();
    const subscription = store.subscribe(
      { after: await store.headPosition(), filter: { tenantId: tenant }, batchSize: 1000 },
      (events) => {
        for (const event of events) {
          positions.push(event.position);
          ids.add(event.id);
        }
        return Promise.resolve();
      },
    );
    // On a store of its own, woken only by other processes' notifications: it reads one type of the two and
    // takes the other type's commits as read without reading them.
    const typed = await openPostgresEventStore(`${url}?application_name=typed`);
    const gapIds = new Set<string>();
    const typedSubscription = typed.subscribe(
      {
        after: await typed.headPosition(),
        filter: { eventTypes: ['Gap'], tenantId: tenant },
        batchSize: 1000,
      },
      (events) => {
        for (const event of events) gapIds.add(event.id);
        return Promise.resolve();
      },
    );

    // The trap, measured: a reader that reads up to the highest position it sees, beside the subscriber.
    const naive = new pg.Client(url);
    await naive.connect();
    let naiveSeen = 0;
    let naiveRunning = true;
    const naiveReader = (async () => {
      // Once more after the appenders are done: whatever it missed then, it missed for good.
      for (let after = 0, last = false; !last;) {
        last = !naiveRunning;
        const { rows } = await naive.query<{ position: string }>(
          'SELECT position FROM events WHERE tenant_id = $1 AND position > $2 ORDER BY position',
          [tenant, after],
        );
        naiveSeen += rows.length;
        if (rows.length > 0) after = Number(rows.at(-1)!.position);
        else await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();

    const share = Math.ceil(total / processes);
    const children = Array.from({ length: processes }, (_, n) =>
      appender(url, tenant, `p${n}`, Math.min(share, total - share * n)),
    );
    try {
      expect(await Promise.all(children.map(exited))).to.deep.equal(children.map(() => 0));
      await eventually(() => ids.size >= total, 30_000);
      const gaps = (
        await store.readAll({ filter: { eventTypes: ['Gap'], tenantId: tenant }, maxCount: total })
      ).events;
      await eventually(() => gapIds.size >= gaps.length, 30_000);
      expect(gapIds.size, 'events of the one type').to.equal(gaps.length);
      for (const event of gaps) expect(gapIds.has(event.id)).to.equal(true);
    } finally {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
      naiveRunning = false;
      await naiveReader;
      await naive.end();
      await subscription.stop();
      await typedSubscription.stop();
      await typed.close();
    }

    const { rows } = await store
      .readAll({ filter: { tenantId: tenant }, maxCount: total + 1 })
      .then((page) => ({ rows: page.events }));
    expect(rows).to.have.length(total);
    expect(ids.size, 'distinct events delivered').to.equal(total);
    expect(positions, 'deliveries').to.have.length(total);
    const outOfOrder = positions.filter((position, index) => index > 0 && position <= positions[index - 1]!);
    expect(outOfOrder, 'positions delivered out of order').to.deep.equal([]);
    for (const event of rows) expect(ids.has(event.id)).to.equal(true);
    console.log(
      `      ${total} events, 0 gaps; a reader that reads up to the highest visible position skipped ${total - naiveSeen}`,
    );
  });
});

import { expect } from 'chai';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { openSqliteReadModels } from '../../src/readmodels/sqlite.js';
import { parkedRecord, parkingStream } from '../../src/readmodels/parking.js';
import { projectionRunner } from '../../src/readmodels/runner.js';
import { observationsProjection } from '../../projections/observations.js';
import { pino } from 'pino';
import { tempDir } from '../support/adapters.js';
import { anObservationRecorded, eventually } from '../support/events.js';
import { freePort, startTs, stop } from '../support/process.js';
import { request, startTestServer, testCursorSecret, withTenant } from '../support/server.js';

/** The CLI as an operator runs it: a real process on the same DATA_DIR. */
const cli = async (dataDir: string, ...args: string[]) => {
  const run = startTs('src/cli/main.ts', args, { DATA_DIR: dataDir });
  const code = await run.exited;
  return { code, stdout: run.output.stdout, stderr: run.output.stderr };
};

/** Observations appended straight to the event store, as a busy history would have them. */
const seedObservations = async (
  dataDir: string,
  tenantId: string,
  count: number,
  occurredAt = new Date(),
): Promise<number> => {
  const store = openSqliteEventStore(join(dataDir, 'events.db'));
  try {
    for (let done = 0; done < count; done += 500) {
      // Concurrent appends share a commit: seeding stays fast.
      await Promise.all(
        Array.from({ length: Math.min(500, count - done) }, (_, k) => {
          const { stream, event } = anObservationRecorded(tenantId, {
            notes: `seeded ${done + k}`,
            attributes: { species: 'fox' },
          });
          event.metadata.occurredAt = occurredAt.toISOString();
          return store.appendToStream(stream, [event], 'no_stream');
        }),
      );
    }
    return await store.headPosition();
  } finally {
    await store.close();
  }
};

const headPosition = async (dataDir: string) => {
  const store = openSqliteEventStore(join(dataDir, 'events.db'));
  try {
    return await store.headPosition();
  } finally {
    await store.close();
  }
};

/** A minimal RFC 4180 reader: quoted fields, doubled quotes, CRLF row ends. */
const parseCsv = (text: string): string[][] => {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') ((field += '"'), (i += 1));
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') (row.push(field), (field = ''));
    else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      ((row = []), (field = ''), (i += 1));
    } else field += c;
  }
  return rows;
};

const tricky = ['plain', 'comma, and "quotes"', 'two\nlines'];

describe('projections and exports on the command line', function () {
  this.timeout(180_000);
  let dir: string;
  let remove: () => void;
  let tenantId: string;
  let adminKey: string;
  /** The head after the first observation: a moment in the past. */
  let firstPosition: number;

  beforeEach(async () => {
    ({ dir, remove } = tempDir());
    const server = await startTestServer({}, { dataDir: dir });
    try {
      ({ tenantId, adminKey } = await withTenant(server));
      for (const [i, notes] of tricky.entries()) {
        const created = await request(`${server.url}/v1/tenants/${tenantId}/observations`, {
          method: 'POST',
          body: { observedAt: `2026-05-0${i + 1}T09:30:00Z`, notes, attributes: { species: 'fox', n: i } },
          headers: { 'X-API-Key': adminKey },
        });
        expect(created.status).to.equal(201);
        if (i === 0) firstPosition = Number(created.headers.get('X-Position'));
      }
      const head = await server.stores.eventStore.headPosition();
      for (const runner of server.service.runners) expect(await runner.waitFor(head, 10_000)).to.equal(true);
    } finally {
      await server.close();
    }
  });
  afterEach(() => remove());

  it('rebuilds beside a running service, which answers throughout and follows the swap', async () => {
    await seedObservations(dir, tenantId, 20_000);
    const port = await freePort();
    const service = startTs('src/main.ts', [], {
      DATA_DIR: dir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      // The test server that seeded the store ran with this one; another would be refused at start.
      CURSOR_SECRET: testCursorSecret,
    });
    const url = `http://127.0.0.1:${port}/v1/tenants/${tenantId}/observations`;
    const headers = { 'X-API-Key': adminKey };
    try {
      await eventually(
        async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.ok === true,
        30_000,
      );
      // The service catches up with the seeded history first.
      let before: string[] = [];
      await eventually(async () => {
        const page = await request(`${url}?limit=20&minPosition=20003`, { headers });
        before = page.status === 200 ? page.body.data.map((o: { id: string }) => o.id) : [];
        return page.status === 200;
      }, 60_000);
      expect(before).to.have.length(20);

      const rebuilding = startTs('src/cli/main.ts', ['projections', 'rebuild', 'observations'], {
        DATA_DIR: dir,
      });
      let finished = false;
      void rebuilding.exited.then(() => (finished = true));
      const answers: number[] = [];
      while (!finished) {
        const page = await request(`${url}?limit=20`, { headers });
        answers.push(page.status);
        expect(page.status, JSON.stringify(page.body)).to.equal(200);
        expect(page.body.data.map((o: { id: string }) => o.id)).to.deep.equal(before);
        // Paced below the per-key rate limit.
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      expect(await rebuilding.exited, rebuilding.output.stderr).to.equal(0);
      expect(rebuilding.output.stdout).to.match(
        /^observations: rebuilt up to position \d+ \(20003 events\) and swapped in$/m,
      );
      // Not a terminal: plain progress lines.
      expect(rebuilding.output.stderr).to.match(/^observations: (\d+%|catching up|swapping|done)/m);
      expect(rebuilding.output.stderr).to.not.include('\r');
      expect(answers.length).to.be.greaterThan(0);
      expect(new Set(answers)).to.deep.equal(new Set([200]));

      const after = await request(`${url}?limit=20`, { headers });
      expect(after.body.data.map((o: { id: string }) => o.id)).to.deep.equal(before);
      // The service's runner writes the swapped-in table: a new observation is listed at once.
      const created = await request(url, {
        method: 'POST',
        body: { observedAt: '2026-07-01T09:30:00Z', notes: 'after the swap' },
        headers,
      });
      const listed = await request(`${url}?limit=5&minPosition=${created.headers.get('X-Position')}`, {
        headers,
      });
      expect(listed.status).to.equal(200);
      expect(listed.body.data.map((o: { id: string }) => o.id)).to.include(created.body.id);
      const status = await cli(dir, 'projections', 'status', '--json');
      const observations = (
        JSON.parse(status.stdout) as { projections: { projection: string }[] }
      ).projections.find((p) => p.projection === 'observations');
      expect(observations).to.deep.include({ lagEvents: 0, lagSeconds: 0, lastError: null });
    } finally {
      await stop(service.child, service.exited);
    }
  });

  it('shows checkpoints, lag in events and seconds, and the last error', async () => {
    const hourAgo = new Date(Date.now() - 3600_000);
    const head = await seedObservations(dir, tenantId, 120, hourAgo);
    const readModels = openSqliteReadModels(join(dir, 'readmodels.db'));
    await readModels.recordError('visits', 'visit projection exploded');
    const checkpoint = await readModels.getCheckpoint('observations');
    await readModels.close();

    const json = await cli(dir, 'projections', 'status', '--json');
    expect(json.code, json.stderr).to.equal(0);
    const status = JSON.parse(json.stdout) as {
      head: number;
      projections: {
        projection: string;
        checkpoint: number;
        lagEvents: number;
        lagSeconds: number;
        lastError: { message: string } | null;
      }[];
    };
    expect(status.head).to.equal(head);
    const byName = new Map(status.projections.map((p) => [p.projection, p]));
    expect(byName.get('observations')).to.deep.include({ checkpoint, lagEvents: 120 });
    expect(byName.get('observations')!.lagSeconds).to.be.within(3599, 3700);
    expect(byName.get('visits')!.lastError?.message).to.equal('visit projection exploded');
    expect(byName.get('tenants')).to.deep.include({ lagEvents: 0, lagSeconds: 0, lastError: null });

    const text = await cli(dir, 'projections', 'status');
    expect(text.stdout).to.match(
      /^projection\s+checkpoint\s+lag \(events\)\s+lag \(s\)\s+parked\s+last error$/m,
    );
    expect(text.stdout).to.match(new RegExp(`^observations\\s+${checkpoint}\\s+120\\s+\\d+\\s+0\\s+-$`, 'm'));
    expect(text.stdout).to.match(/^visits\s+\d+\s+0\s+0\s+0\s+\S+ visit projection exploded$/m);
  });

  it('shows parked events, retries and skips them, and records each decision as an event', async () => {
    const events = openSqliteEventStore(join(dir, 'events.db'));
    const readModels = openSqliteReadModels(join(dir, 'readmodels.db'));
    const observation = (attributes: Record<string, unknown>) => {
      const { observationId, stream, event } = anObservationRecorded(tenantId, { attributes });
      return { observationId, append: () => events.appendToStream(stream, [event], 'no_stream') };
    };
    let fixed: { observationId: string; position: number };
    let poison: number;
    try {
      // An event parked by a bug fixed since: its document was never written, the checkpoint went past it.
      const good = observation({ species: 'fox' });
      const goodAt = (await good.append()).lastPosition;
      fixed = { observationId: good.observationId, position: goodAt };
      await readModels.commit('observations', [], goodAt);
      const [goodEvent] = (await events.readAll({ after: goodAt - 1, maxCount: 1 })).events;
      await readModels.parkEvent(parkedRecord('observations', goodEvent!, 'a bug fixed since', new Date()));
      // An event that still cannot be applied, parked by the runner as the service would.
      let deep: Record<string, unknown> = {};
      for (let depth = 0; depth < 1000; depth += 1) deep = { deep };
      poison = (await observation(deep).append()).lastPosition;
      const runner = projectionRunner(observationsProjection, {
        eventStore: events,
        readModels,
        logger: pino({ level: 'silent' }),
      });
      await runner.start();
      expect(await runner.waitFor(poison, 10_000)).to.equal(true);
      await runner.stop();
    } finally {
      await readModels.close();
      await events.close();
    }

    const json = await cli(dir, 'projections', 'status', '--json');
    expect(json.code, json.stderr).to.equal(0);
    const status = JSON.parse(json.stdout) as {
      projections: { projection: string; parked: number }[];
      parked: { projection: string; position: number; tenantId: string; eventType: string; error: string }[];
    };
    expect(status.projections.find((p) => p.projection === 'observations')?.parked).to.equal(2);
    expect(status.parked.map((p) => [p.projection, p.position, p.tenantId, p.eventType])).to.deep.equal([
      ['observations', fixed.position, tenantId, 'ObservationRecorded'],
      ['observations', poison, tenantId, 'ObservationRecorded'],
    ]);
    const text = await cli(dir, 'projections', 'status');
    expect(text.stdout).to.match(new RegExp(`^observations\\s+\\d+\\s+0\\s+0\\s+2\\s+-$`, 'm'));
    expect(text.stdout).to.include(`observations position ${poison}  ${tenantId}  ObservationRecorded`);
    expect(text.stdout).to.match(/malformed JSON/);

    // Both again: the fixed one applies and leaves the list, the other stays with its error (exit code 1).
    const retried = await cli(dir, 'projections', 'parked', 'retry', 'observations');
    expect(retried.code, retried.stderr).to.equal(1);
    expect(retried.stdout).to.include(`observations position ${fixed.position}: applied, no longer parked`);
    expect(retried.stdout).to.include(`observations position ${poison}: still parked: malformed JSON`);

    const usage = await cli(dir, 'projections', 'parked', 'skip', 'observations');
    expect(usage.code).to.equal(2);
    expect(usage.stderr).to.include('--position');
    const notParked = await cli(
      dir,
      'projections',
      'parked',
      'skip',
      'observations',
      '--position',
      String(fixed.position),
    );
    expect(notParked.code).to.equal(2);
    expect(notParked.stderr).to.include(`parked: ${poison}`);

    const skipped = await cli(
      dir,
      'projections',
      'parked',
      'skip',
      'observations',
      '--position',
      String(poison),
    );
    expect(skipped.code, skipped.stderr).to.equal(0);
    expect(skipped.stdout).to.include(`observations position ${poison}: skipped`);
    const after = JSON.parse((await cli(dir, 'projections', 'status', '--json')).stdout) as typeof status;
    expect(after.parked).to.deep.equal([]);

    const store = openSqliteEventStore(join(dir, 'events.db'));
    const models = openSqliteReadModels(join(dir, 'readmodels.db'));
    try {
      const decisions = await store.readStream(parkingStream(tenantId, 'observations'));
      expect(
        decisions.map((e) => [e.type, e.metadata.actor, (e.data as { position: number }).position]),
      ).to.deep.equal([
        ['ProjectionEventParked', 'system:projections', poison],
        ['ProjectionEventRetried', 'cli', fixed.position],
        ['ProjectionEventParked', 'cli', poison],
        ['ProjectionEventSkipped', 'cli', poison],
      ]);
      await models.ensureCollection(observationsProjection.collection);
      const applied = await models.get('observations', { tenantId, id: fixed.observationId });
      expect(applied?.position).to.equal(fixed.position);
    } finally {
      await models.close();
      await store.close();
    }
  });

  it('exports read models as NDJSON and CSV, live or from a snapshot', async () => {
    const ndjson = await cli(dir, 'export', 'observations', '--format', 'ndjson');
    expect(ndjson.code, ndjson.stderr).to.equal(0);
    const docs = ndjson.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string; notes: string; attributes: unknown });
    expect(docs.map((d) => d.notes)).to.deep.equal(tricky);

    const csv = await cli(dir, 'export', 'observations', '--format', 'csv', '--tenant', tenantId);
    expect(csv.code, csv.stderr).to.equal(0);
    const [header, ...rows] = parseCsv(csv.stdout);
    expect(header).to.deep.equal([
      'id',
      'tenantId',
      'observedAt',
      'position',
      'locationId',
      'visitId',
      'notes',
      'attributes',
      'media',
      'createdAt',
      'updatedAt',
      'version',
    ]);
    expect(rows.map((row) => row[0])).to.deep.equal(docs.map((d) => d.id));
    expect(rows.map((row) => row[6])).to.deep.equal(tricky);
    expect(rows.map((row) => JSON.parse(row[7]!) as unknown)).to.deep.equal(docs.map((d) => d.attributes));
    expect(rows[0]![4]).to.equal(''); // null locationId
    expect(csv.stdout).to.include('"comma, and ""quotes"""');

    // Every name that exists is accepted; another tenant has nothing.
    for (const name of ['locations', 'visits', 'cv-jobs']) {
      const empty = await cli(dir, 'export', name, '--format', 'csv');
      expect(empty.code, empty.stderr).to.equal(0);
      expect(parseCsv(empty.stdout)).to.have.length(1);
    }

    const built = await cli(
      dir,
      'projections',
      'build',
      'observations',
      '--until',
      String(firstPosition),
      '--into',
      'early',
    );
    expect(built.code, built.stderr).to.equal(0);
    expect(built.stdout).to.include(
      `Snapshot early of observations as of position ${firstPosition}: stopped at position ${firstPosition}, `,
    );
    // The export it suggests is the one that reads it.
    const suggested = /Read it with: obs (.+)$/m.exec(built.stdout)![1]!.split(' ');
    const early = await cli(dir, ...suggested);
    expect(early.code, early.stderr).to.equal(0);
    expect(
      early.stdout
        .trimEnd()
        .split('\n')
        .map((line) => (JSON.parse(line) as { id: string }).id),
    ).to.deep.equal([docs[0]!.id]);
    const listed = await cli(dir, 'projections', 'status');
    expect(listed.stdout).to.match(/snapshot early of observations until position \d+: complete/);

    // As of a time: it stops at the last event up to then, and says which.
    const later = await cli(
      dir,
      'projections',
      'build',
      'observations',
      '--until',
      new Date().toISOString(),
      '--into',
      'now',
      '--json',
    );
    expect(later.code, later.stderr).to.equal(0);
    const head = await headPosition(dir);
    expect(JSON.parse(later.stdout)).to.deep.include({ status: 'complete', checkpoint: head });
  });

  it('refuses bad input with exit code 2 and says why', async () => {
    const cases: [string[], RegExp][] = [
      [
        ['projections', 'build', 'observations', '--until', '2999-01-01T00:00:00Z', '--into', 'x'],
        /is in the future/,
      ],
      [
        ['projections', 'build', 'observations', '--until', 'last tuesday', '--into', 'x'],
        /neither a position nor an ISO 8601 time/,
      ],
      [
        ['projections', 'build', 'observations', '--until', '99999999', '--into', 'x'],
        /past the newest event/,
      ],
      [['projections', 'build', 'observations', '--until', '1', '--into', 'Bad-Name'], /snapshot name/],
      [
        ['projections', 'rebuild', 'sightings'],
        /Unknown projection sightings; known: tenants, .*observations, locations, visits/,
      ],
      [['projections', 'rebuild', 'tenants', '--tenant', tenantId], /one partition/],
      [
        ['export', 'sightings', '--format', 'csv'],
        /Unknown read model sightings; known: observations, locations, visits, cv-jobs/,
      ],
      [['export', 'observations', '--format', 'xml'], /--format must be ndjson or csv/],
      [['export', 'observations', '--format', 'csv', '--from', 'nothing'], /No snapshot named nothing/],
      // As audit does: a tenant that does not exist is not an empty export.
      [
        ['export', 'observations', '--format', 'ndjson', '--tenant', 't_nobody'],
        /^obs: store sqlite:.*\nerror: Tenant t_nobody does not exist\n$/,
      ],
      [['export', 'observations', '--format', 'ndjson', '--tenant', 'nobody'], /is not a tenant id/],
      // No export reads stream_heads: no snapshot is offered that could not be read.
      [
        ['projections', 'build', 'stream_heads', '--until', '1', '--into', 'heads'],
        /^error: stream_heads has no export, so a snapshot of it could not be read; snapshots are of: observations, /,
      ],
    ];
    for (const [args, message] of cases) {
      const run = await cli(dir, ...args);
      expect(run.code, args.join(' ')).to.equal(2);
      expect(run.stderr, args.join(' ')).to.match(message);
      expect(run.stdout, args.join(' ')).to.equal('');
    }
  });

  it('leaves the live read model untouched when Ctrl-C stops a rebuild, and resumes on the next run', async () => {
    const head = await seedObservations(dir, tenantId, 50_000);
    // The live read model catches up with the seeded history, as a running service would have.
    const port = await freePort();
    const service = startTs('src/main.ts', [], {
      DATA_DIR: dir,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      CURSOR_SECRET: testCursorSecret,
    });
    try {
      await eventually(async () => {
        const page = await request(
          `http://127.0.0.1:${port}/v1/tenants/${tenantId}/observations?limit=1&minPosition=${head}`,
          {
            headers: { 'X-API-Key': adminKey },
          },
        ).catch(() => null);
        return page?.status === 200;
      }, 120_000);
    } finally {
      await stop(service.child, service.exited);
    }
    const liveState = () => {
      const db = new Database(join(dir, 'readmodels.db'), { readonly: true });
      try {
        const mapping = db
          .prepare("SELECT physical FROM collections WHERE name = 'observations'")
          .pluck()
          .get() as string | undefined;
        const table = `rm_${mapping ?? 'observations'}`;
        return {
          table,
          rows: db.prepare(`SELECT count(*) AS n, sum(position) AS positions FROM ${table}`).get(),
          checkpoint: db
            .prepare("SELECT position FROM checkpoints WHERE projection = 'observations'")
            .pluck()
            .get(),
        };
      } finally {
        db.close();
      }
    };
    const before = liveState();
    expect(before.checkpoint).to.equal(head);

    const rebuilding = startTs(
      'src/cli/main.ts',
      ['projections', 'rebuild', 'observations', '--batch-size', '500'],
      {
        DATA_DIR: dir,
      },
    );
    await eventually(() => /observations: \d+%/.test(rebuilding.output.stderr), 60_000);
    rebuilding.child.kill('SIGINT');
    expect(await rebuilding.exited, rebuilding.output.stderr).to.equal(130);
    const stopped = /observations: interrupted at position (\d+); the live read model is untouched/.exec(
      rebuilding.output.stdout,
    );
    expect(stopped, rebuilding.output.stdout).to.not.equal(null);
    const stoppedAt = Number(stopped![1]);
    expect(stoppedAt).to.be.within(1, head - 1);
    expect(liveState()).to.deep.equal(before);
    const status = await cli(dir, 'projections', 'status');
    expect(status.stdout).to.match(
      new RegExp(`rebuild of observations: interrupted at position ${stoppedAt}`),
    );

    const resumed = await cli(dir, 'projections', 'rebuild', 'observations');
    expect(resumed.code, resumed.stderr).to.equal(0);
    expect(resumed.stdout).to.include(`resumed from ${stoppedAt}`);
    const after = liveState();
    expect(after.table).to.not.equal(before.table);
    expect(after.rows).to.deep.equal(before.rows);
    expect(after.checkpoint).to.equal(head);
  });
});

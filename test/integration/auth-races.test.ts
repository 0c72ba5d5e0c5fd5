import { expect } from 'chai';
import { retryOnConflict } from '../../src/core/conflicts.js';
import { hashSecret, newSecret } from '../../src/credentials/secrets.js';
import { handleCommand, type CommandContext } from '../../src/core/command-handler.js';
import { VersionConflictError } from '../../src/core/errors.js';
import { streamName } from '../../src/core/streams.js';
import { sessionDecider } from '../../src/credentials/session.decider.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { openSqliteEventStore } from '../../src/eventstore/sqlite.js';
import { tempDir } from '../support/adapters.js';

/**
 * Over HTTP, the embedded store never lets two requests interleave between read and append, so these
 * races are set up directly: two commands started in the same tick both read the stream before either
 * appends, as two requests do against EventStoreDB.
 */
describe('racing refreshes of one refresh token', () => {
  let store: EventStore;
  let remove: () => void;
  const tenantId = 't_race';
  const stream = streamName('session', tenantId, 's_race');
  const context: CommandContext = {
    tenantId,
    actor: 'user:u_race',
    correlationId: 'race',
    causationId: null,
    now: new Date(),
    newEventId: () => crypto.randomUUID(),
  };
  const first = newSecret();
  const refresh = () =>
    handleCommand(
      store,
      sessionDecider,
      stream,
      {
        type: 'Refresh',
        presentedHash: hashSecret(first),
        nextHash: hashSecret(newSecret()),
        expiresAt: new Date(Date.now() + 60_000).toISOString(),
        now: new Date(),
      },
      context,
    );

  beforeEach(async () => {
    const dir = tempDir();
    remove = dir.remove;
    store = openSqliteEventStore(`${dir.dir}/events.db`);
    await handleCommand(
      store,
      sessionDecider,
      stream,
      {
        type: 'StartSession',
        sessionId: 's_race',
        userId: 'u_race',
        refreshTokenHash: hashSecret(first),
        expiresAt: new Date(Date.now() + 60_000).toISOString(),
      },
      context,
    );
  });
  afterEach(async () => {
    await store.close();
    remove();
  });

  it('makes the loser fail with a version conflict when nothing retries', async () => {
    const outcomes = await Promise.allSettled([refresh(), refresh()]);
    expect(outcomes.map((outcome) => outcome.status).sort()).to.deep.equal(['fulfilled', 'rejected']);
    const rejected = outcomes.find((outcome) => outcome.status === 'rejected');
    expect(rejected?.reason).to.be.instanceOf(VersionConflictError);
  });

  it('decides the loser again as a replay of a used token, which revokes the family', async () => {
    const [a, b] = await Promise.all([retryOnConflict(refresh), retryOnConflict(refresh)]);
    const types = [...a.events, ...b.events].map((event) => event.type).sort();
    expect(types).to.deep.equal(['RefreshTokenRotated', 'SessionRevoked']);
    const recorded = await store.readStream(stream);
    expect(recorded.map((event) => event.type)).to.deep.equal([
      'SessionStarted',
      'RefreshTokenRotated',
      'SessionRevoked',
    ]);
  });
});

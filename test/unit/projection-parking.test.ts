import { expect } from 'chai';
import Database from 'better-sqlite3';
import { MongoNetworkError, MongoServerError, MongoServerSelectionError } from 'mongodb';
import { UnavailableError } from '../../src/core/errors.js';
import { isStoreFailure } from '../../src/core/store-failures.js';
import { errorText, failureVerdict, parkingStream } from '../../src/readmodels/parking.js';
import { CollectionSwappedError } from '../../src/readmodels/port.js';
import { parseStreamName } from '../../src/core/streams.js';

const sqliteError = (code: string) => new Database.SqliteError(`failed: ${code}`, code);

describe('Telling a poison event from a failing store', () => {
  describe('when applying the event alone failed while the store still answers', () => {
    it('blames the event for a refused document or a fold that throws', () => {
      expect(failureVerdict(sqliteError('SQLITE_ERROR'), true)).to.equal('poison');
      expect(failureVerdict(new Error('cannot fold'), true)).to.equal('poison');
      expect(failureVerdict(new RangeError('Maximum call stack size exceeded'), true)).to.equal('poison');
      expect(failureVerdict(new MongoServerError({ message: 'too deep', code: 15 }), true)).to.equal(
        'poison',
      );
      expect(failureVerdict('a thrown string', true)).to.equal('poison');
    });

    it('still blames the store when the error says the store failed', () => {
      for (const code of [
        'SQLITE_FULL',
        'SQLITE_READONLY',
        'SQLITE_READONLY_DBMOVED',
        'SQLITE_BUSY',
        'SQLITE_BUSY_SNAPSHOT',
        'SQLITE_LOCKED',
        'SQLITE_IOERR_WRITE',
        'SQLITE_CANTOPEN',
      ]) {
        expect(failureVerdict(sqliteError(code), true), code).to.equal('transient');
      }
      expect(failureVerdict(Object.assign(new Error('no space'), { code: 'ENOSPC' }), true)).to.equal(
        'transient',
      );
      expect(failureVerdict(new MongoNetworkError('socket closed'), true)).to.equal('transient');
      expect(failureVerdict(new MongoServerError({ message: 'stepped down', code: 189 }), true)).to.equal(
        'transient',
      );
      expect(
        failureVerdict(
          new MongoServerError({ message: 'retry', errorLabels: ['RetryableWriteError'] }),
          true,
        ),
      ).to.equal('transient');
      expect(failureVerdict(new CollectionSwappedError('observations'), true)).to.equal('transient');
      expect(failureVerdict(new UnavailableError('MongoDB is unreachable'), true)).to.equal('transient');
    });

    it('looks through the causes of a wrapped error', () => {
      const wrapped = new Error('commit failed', { cause: sqliteError('SQLITE_FULL') });
      expect(isStoreFailure(wrapped)).to.equal(true);
      expect(failureVerdict(wrapped, true)).to.equal('transient');
    });
  });

  describe('when the store does not answer either', () => {
    it('never blames the event', () => {
      expect(failureVerdict(sqliteError('SQLITE_ERROR'), false)).to.equal('transient');
      expect(failureVerdict(new Error('cannot fold'), false)).to.equal('transient');
      expect(
        failureVerdict(new MongoServerSelectionError('no server', { type: 'Unknown' } as never), false),
      ).to.equal('transient');
    });
  });

  describe('the record of a decision', () => {
    it('goes to a stream of the event’s tenant that parses back', () => {
      expect(parseStreamName(parkingStream('t_abc123', 'cv_jobs_pending'))).to.deep.equal({
        aggregate: 'projectionparking',
        tenantId: 't_abc123',
        id: 'cv_jobs_pending',
      });
    });

    it('keeps the start of a long error', () => {
      expect(errorText(new Error('x'.repeat(5000)))).to.have.length(1000);
      expect(errorText('plain')).to.equal('plain');
    });
  });
});

import { expect } from 'chai';
import { ValidationError } from '../../src/core/errors.js';
import { mergePatch } from '../../src/core/merge-patch.js';
import { parseStreamName, streamName } from '../../src/core/streams.js';
import { newId } from '../../src/core/ids.js';
import { decodeOrThrow } from '../../src/http/codec.js';
import { cursorCodec } from '../../src/http/cursor.js';
import { CreateObservationBody, ListObservationsQuery } from '../../src/observations/codecs.js';

const errorsOf = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error.errors;
    throw error;
  }
  throw new Error('expected a validation error');
};

describe('request codecs', () => {
  it('normalizes observedAt to UTC', () => {
    const body = decodeOrThrow(CreateObservationBody, { observedAt: '2026-05-01T09:30:00+02:00' });
    expect(body.observedAt).to.equal('2026-05-01T07:30:00.000Z');
  });

  it('names the deepest offending path, and unknown fields, in one answer', () => {
    const errors = errorsOf(() =>
      decodeOrThrow(CreateObservationBody, {
        observedAt: '2026-05-01T09:30:00Z',
        position: { lat: 999, lon: 7 },
        colour: 'red',
      }),
    );
    expect(errors.map((e) => e.path).sort()).to.deep.equal(['colour', 'position.lat']);
    expect(errors.find((e) => e.path === 'position.lat')?.message).to.match(/latitude between -90 and 90/);
  });

  it('reports a missing required field', () => {
    expect(errorsOf(() => decodeOrThrow(CreateObservationBody, {}))).to.deep.equal([
      { path: 'observedAt', message: 'is required' },
    ]);
  });

  it('refuses dates without a time zone and impossible dates', () => {
    expect(
      errorsOf(() => decodeOrThrow(CreateObservationBody, { observedAt: '2026-05-01T09:30:00' }))[0]?.path,
    ).to.equal('observedAt');
    expect(
      errorsOf(() => decodeOrThrow(CreateObservationBody, { observedAt: '2026-13-45T09:30:00Z' }))[0]?.path,
    ).to.equal('observedAt');
  });

  it('parses list parameters and refuses a limit of 500, a bad bbox and unknown parameters', () => {
    expect(decodeOrThrow(ListObservationsQuery, { limit: '20', bbox: '6,44,8,46' })).to.deep.equal({
      limit: 20,
      bbox: { minLon: 6, minLat: 44, maxLon: 8, maxLat: 46 },
    });
    expect(errorsOf(() => decodeOrThrow(ListObservationsQuery, { limit: '500' }))).to.deep.equal([
      { path: 'limit', message: 'must be a whole number from 1 to 200' },
    ]);
    expect(errorsOf(() => decodeOrThrow(ListObservationsQuery, { bbox: '6,46,8,44' }))[0]?.path).to.equal(
      'bbox',
    );
    expect(errorsOf(() => decodeOrThrow(ListObservationsQuery, { pageSize: '5' }))[0]?.path).to.equal(
      'pageSize',
    );
    expect(errorsOf(() => decodeOrThrow(ListObservationsQuery, { limit: ['5', '6'] }))[0]?.message).to.equal(
      'must be given once',
    );
  });
});

describe('JSON merge patch', () => {
  it('merges objects, removes keys set to null, and replaces everything else', () => {
    expect(
      mergePatch({ a: 1, b: { c: 2, d: 3 }, e: [1] }, { b: { c: null, f: 4 }, e: [2], g: 'x' }),
    ).to.deep.equal({
      a: 1,
      b: { d: 3, f: 4 },
      e: [2],
      g: 'x',
    });
  });
});

describe('stream names and ids', () => {
  it('round-trips the tenant and the id through a stream name', () => {
    const id = newId('o');
    expect(id).to.match(/^o_[0-9a-z]{26}$/);
    expect(parseStreamName(streamName('observation', 't_abc', id))).to.deep.equal({
      aggregate: 'observation',
      tenantId: 't_abc',
      id,
    });
  });

  it('orders ids by creation time', () => {
    expect(newId('o', new Date(1_000)) < newId('o', new Date(2_000))).to.equal(true);
  });

  it('spells the time in its first ten digits and draws eighty random bits after them, never twice', () => {
    const at = new Date('2026-11-27T12:00:00.123Z');
    const ids = Array.from({ length: 5_000 }, () => newId('o', at));
    expect(new Set(ids).size).to.equal(ids.length);
    const digit = (c: string) => '0123456789abcdefghjkmnpqrstvwxyz'.indexOf(c);
    for (const id of ids) {
      expect(id).to.match(/^o_[0-9a-hjkmnp-tv-z]{26}$/);
      const time = [...id.slice(2, 12)].reduce((value, c) => value * 32 + digit(c), 0);
      expect(time).to.equal(at.getTime());
    }
    // Every random digit takes every value: no bit of the 80 is stuck (the pool refills across the run).
    for (let place = 12; place < 28; place += 1) {
      expect(new Set(ids.map((id) => id[place])).size, `digit ${place}`).to.equal(32);
    }
  });
});

describe('list cursors', () => {
  const cursors = cursorCodec('secret');

  it('round-trips a position for the same query', () => {
    const cursor = cursors.encode({ value: '2026-01-01T00:00:00.000Z', id: 'o_1' }, 'q');
    expect(cursors.decode(cursor, 'q')).to.deep.equal({ value: '2026-01-01T00:00:00.000Z', id: 'o_1' });
  });

  it('refuses a tampered cursor, garbage, and a cursor from another query', () => {
    const cursor = cursors.encode({ value: 'v', id: 'o_1' }, 'q');
    const [payload, signature] = cursor.split('.');
    const forged = `${Buffer.from(JSON.stringify({ v: 'v', i: 'o_9', q: 'q' })).toString('base64url')}.${signature}`;
    expect(() => cursors.decode(forged, 'q')).to.throw(ValidationError);
    expect(() => cursors.decode('garbage', 'q')).to.throw(ValidationError);
    expect(() => cursors.decode(`${payload}.`, 'q')).to.throw(ValidationError);
    expect(() => cursors.decode(cursor, 'other')).to.throw(ValidationError, /other filters/);
  });
});

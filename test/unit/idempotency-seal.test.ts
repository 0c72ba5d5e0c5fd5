import { expect } from 'chai';
import { idempotencySeal } from '../../src/http/idempotency-seal.js';
import type { StoredResponse } from '../../src/http/idempotency-store.js';

describe('the sealing of kept Idempotency-Key answers', () => {
  const seal = idempotencySeal('a key of at least 32 random characters!');
  const id = { scope: 't_acme|client:c_1', key: 'create-key-1' };
  const secret = 'obs_t_acme.k_1.s3cr3t-s3cr3t-s3cr3t';
  const response: StoredResponse = {
    status: 201,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      location: '/v1/tenants/t_acme/api-keys/k_1',
    },
    body: Buffer.from(JSON.stringify({ id: 'k_1', key: secret })),
  };
  const fingerprint = seal.fingerprint({ route: 'POST /v1/tenants/:tenantId/api-keys' }, Buffer.from('{}'));

  it('keeps no byte of the body in clear, and opens it again under the same key', () => {
    const sealed = seal.seal(id, fingerprint, response);
    expect(sealed.body.toString('latin1')).not.to.contain('s3cr3t');
    expect(sealed.status).to.equal(201);
    expect(sealed.headers).to.deep.equal(response.headers);
    expect(seal.open(id, fingerprint, sealed)).to.deep.equal(response);
  });

  it('does not open under another key, for another record, or with other status or headers', () => {
    const sealed = seal.seal(id, fingerprint, response);
    expect(idempotencySeal('another key of 32 random characters!!').open(id, fingerprint, sealed)).to.equal(
      null,
    );
    expect(seal.open({ ...id, scope: 't_acme|client:c_2' }, fingerprint, sealed)).to.equal(null);
    expect(seal.open({ ...id, key: 'create-key-2' }, fingerprint, sealed)).to.equal(null);
    expect(seal.open(id, 'f'.repeat(64), sealed)).to.equal(null);
    expect(seal.open(id, fingerprint, { ...sealed, status: 200 })).to.equal(null);
    expect(seal.open(id, fingerprint, { ...sealed, headers: { location: '/elsewhere' } })).to.equal(null);
    expect(seal.open(id, fingerprint, { ...sealed, body: Buffer.from('not sealed') })).to.equal(null);
  });

  it('fingerprints with a keyed HMAC: the same request under another key has another fingerprint', () => {
    const body = Buffer.from('{"password":"correct horse battery staple"}');
    const binding = { route: 'POST /v1/tenants/:tenantId/users', scopes: ['admin'] };
    expect(seal.fingerprint(binding, body)).to.equal(seal.fingerprint(binding, body));
    expect(seal.fingerprint(binding, body)).not.to.equal(
      idempotencySeal('another key of 32 random characters!!').fingerprint(binding, body),
    );
    expect(seal.fingerprint(binding, body)).not.to.equal(seal.fingerprint({ ...binding, scopes: [] }, body));
  });
});

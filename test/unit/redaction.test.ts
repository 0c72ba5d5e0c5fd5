import { expect } from 'chai';
import { withoutSecrets } from '../../src/history/redaction.js';

describe('redacting secrets from what operators and auditors read', () => {
  it('replaces hashes and sealed secrets at any depth, and leaves everything else as it is', () => {
    const state = {
      status: 'present',
      passwordHash: 'scrypt$abc',
      user: { id: 'u_1', scopes: ['admin'] },
      entries: { w_1: { sealedSecret: 'v1.a.b.c', subscription: { id: 'w_1' } } },
      list: [{ secretHash: 'h' }, 'plain'],
    };
    expect(withoutSecrets(state)).to.deep.equal({
      status: 'present',
      passwordHash: '[redacted]',
      user: { id: 'u_1', scopes: ['admin'] },
      entries: { w_1: { sealedSecret: '[redacted]', subscription: { id: 'w_1' } } },
      list: [{ secretHash: '[redacted]' }, 'plain'],
    });
    expect(state.passwordHash).to.equal('scrypt$abc');
  });

  it('returns a value without secrets unchanged, not copied', () => {
    const data = { notes: 'x', attributes: { a: [1, { b: 2 }] } };
    expect(withoutSecrets(data)).to.equal(data);
    expect(withoutSecrets(null)).to.equal(null);
    expect(withoutSecrets('passwordHash')).to.equal('passwordHash');
  });
});

import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { open, seal } from '../../src/webhooks/secret-box.js';
import {
  serviceSignature,
  signatureHeaders,
  standardSignature,
  verifyServiceSignature,
} from '../../src/webhooks/signing.js';
import { verifySignatures } from '../support/receiver.js';

const secret = 'whsec-test-0123456789abcdef';
const body =
  '{"id":"evt_1","type":"observation.created","tenantId":"t_1","timestamp":"2026-05-01T00:00:00.000Z","data":{}}';

describe('delivery signatures', () => {
  it('sign the raw body with lowercase hex HMAC-SHA256 in X-Service-Signature', () => {
    const expected = createHmac('sha256', secret).update(body).digest('hex');
    expect(serviceSignature(body, secret))
      .to.equal(expected)
      .and.match(/^[0-9a-f]{64}$/);
    expect(serviceSignature(Buffer.from(body), secret)).to.equal(expected);
  });

  it('sign "<id>.<timestamp>.<body>" for Standard Webhooks as v1,<base64>, keyed with the secret as UTF-8', () => {
    const key = Buffer.from(secret, 'utf8');
    const expected = createHmac('sha256', key).update(`evt_1.1777593600.${body}`).digest('base64');
    expect(standardSignature('evt_1', 1777593600, body, secret)).to.equal(`v1,${expected}`);
  });

  it('put both signatures, the id and the timestamp in seconds in the headers', () => {
    const now = new Date('2026-05-01T00:00:00.750Z');
    const headers = signatureHeaders('evt_1', body, secret, now);
    expect(headers).to.deep.equal({
      'X-Service-Signature': serviceSignature(body, secret),
      'webhook-id': 'evt_1',
      'webhook-timestamp': '1777593600',
      'webhook-signature': standardSignature('evt_1', 1777593600, body, secret),
    });
    const lowerCased = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    expect(verifySignatures(lowerCased, body, secret)).to.equal(true);
    expect(verifySignatures(lowerCased, body.replace('t_1', 't_2'), secret)).to.equal(false);
    expect(verifySignatures(lowerCased, body, `${secret}x`)).to.equal(false);
  });

  it('verify a correct service signature, and refuse a changed body, another secret, or a malformed header', () => {
    const signature = serviceSignature(body, secret);
    expect(verifyServiceSignature(body, signature, secret)).to.equal(true);
    expect(verifyServiceSignature(`${body} `, signature, secret)).to.equal(false);
    expect(verifyServiceSignature(body, signature, 'another-secret-of-16')).to.equal(false);
    expect(verifyServiceSignature(body, signature.toUpperCase(), secret)).to.equal(false);
    expect(verifyServiceSignature(body, signature.slice(2), secret)).to.equal(false);
    expect(verifyServiceSignature(body, '', secret)).to.equal(false);
  });
});

describe('the secret box', () => {
  const key = 'the-webhook-secret-key';

  it('opens what it sealed', () => {
    expect(open(seal(secret, key), key)).to.equal(secret);
    expect(open(seal('ünïcödé secret ✓', key), key)).to.equal('ünïcödé secret ✓');
  });

  it('never shows the secret, and seals it differently each time', () => {
    const first = seal(secret, key);
    const second = seal(secret, key);
    expect(first).to.match(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(first).not.to.include(secret);
    expect(first).not.to.equal(second);
  });

  it('refuses to open with another key, or a tampered or malformed box', () => {
    const sealed = seal(secret, key);
    expect(() => open(sealed, 'another-key')).to.throw();
    const [version, iv, tag, ciphertext] = sealed.split('.');
    const flipped = `${ciphertext!.startsWith('A') ? 'B' : 'A'}${ciphertext!.slice(1)}`;
    expect(() => open([version, iv, tag, flipped].join('.'), key)).to.throw();
    expect(() => open('v2.a.b.c', key)).to.throw(/Not a sealed secret/);
    expect(() => open('garbage', key)).to.throw(/Not a sealed secret/);
  });
});

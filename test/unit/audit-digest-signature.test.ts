import { expect } from 'chai';
import { compactVerify, createLocalJWKSet } from 'jose';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { digestPayload, verifyDigestSignature, type SignedDigest } from '../../client/src/audit-proofs.js';
import {
  canonicalPayload,
  checkDigestSignature,
  digestKeysOf,
  signDigest,
} from '../../src/audit/digest-signature.js';
import { keyringOf, readKeys, retireKey, rotateKeys } from '../../src/auth/signing-keys.js';

describe('the signature of a digest', () => {
  const dir = mkdtempSync(join(tmpdir(), 'digest-keys-'));
  const file = join(dir, 'signing-keys.json');
  const first = rotateKeys(file, new Date('2026-01-01T00:00:00Z'));
  const second = rotateKeys(file, new Date('2026-02-01T00:00:00Z'));
  const keyring = keyringOf(readKeys(file));
  const fields = {
    tenantId: 't_acme',
    position: 1042,
    size: 977,
    logRoot: 'aa'.repeat(32),
    headsRoot: 'bb'.repeat(32),
    streams: 12,
    recordedAt: '2026-05-01T13:00:00.012Z',
  };
  const digest: SignedDigest = { ...fields, signature: signDigest(keyring.signing, fields) };
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('is a JWS that jose verifies with the JWKS, over the canonical JSON of the fields', async () => {
    const { payload, protectedHeader } = await compactVerify(
      digest.signature,
      createLocalJWKSet(keyring.jwks),
    );
    expect(protectedHeader).to.deep.equal({ alg: 'ES256', kid: second.kid, typ: 'obs-digest' });
    expect(new TextDecoder().decode(payload))
      .to.equal(canonicalPayload(fields))
      .and.equal(digestPayload(digest));
    expect(digestPayload(digest)).to.equal(
      `{"headsRoot":"${'bb'.repeat(32)}","logRoot":"${'aa'.repeat(32)}","position":1042,"recordedAt":"2026-05-01T13:00:00.012Z","size":977,"streams":12,"tenantId":"t_acme"}`,
    );
  });

  it('verifies in the client and in obs audit verify', () => {
    expect(verifyDigestSignature(digest, keyring.jwks)).to.deep.equal({ ok: true, kid: second.kid });
    expect(checkDigestSignature(digest.signature, fields, digestKeysOf(keyring.digestJwks))).to.equal('ok');
  });

  it('is refused when forged, signed by another key, for other fields, or malformed', () => {
    const [header, payload, signature] = digest.signature.split('.') as [string, string, string];
    const flipped = Buffer.from(signature, 'base64url');
    flipped[10] = flipped[10]! ^ 1;
    const forged = { ...digest, signature: `${header}.${payload}.${flipped.toString('base64url')}` };
    expect(verifyDigestSignature(forged, keyring.jwks)).to.deep.equal({
      ok: false,
      reason: 'invalid-signature',
    });
    expect(checkDigestSignature(forged.signature, fields, digestKeysOf(keyring.digestJwks))).to.equal(
      'bad signature',
    );

    // The first key's signature under the second key's kid.
    const byFirst = signDigest(first, fields).split('.')[2]!;
    const otherKey = { ...digest, signature: `${header}.${payload}.${byFirst}` };
    expect(verifyDigestSignature(otherKey, keyring.jwks)).to.deep.equal({
      ok: false,
      reason: 'invalid-signature',
    });

    const unknownKid = signDigest({ ...second, kid: 'nonesuch' }, fields);
    expect(verifyDigestSignature({ ...digest, signature: unknownKid }, keyring.jwks)).to.deep.equal({
      ok: false,
      reason: 'unknown-key',
    });
    expect(checkDigestSignature(unknownKid, fields, digestKeysOf(keyring.digestJwks))).to.equal(
      'unknown key',
    );

    for (const changed of [
      { size: 978 },
      { logRoot: 'cc'.repeat(32) },
      { tenantId: 't_other' },
      { position: 1 },
    ]) {
      expect(
        verifyDigestSignature({ ...digest, ...changed }, keyring.jwks),
        JSON.stringify(changed),
      ).to.deep.equal({
        ok: false,
        reason: 'payload-mismatch',
      });
      expect(
        checkDigestSignature(digest.signature, { ...fields, ...changed }, digestKeysOf(keyring.digestJwks)),
      ).to.equal('payload mismatch');
    }

    const none = Buffer.from(JSON.stringify({ alg: 'none', kid: second.kid })).toString('base64url');
    for (const signature of [`${none}.${payload}.`, 'not a jws', `${header}.${payload}`, '']) {
      expect(verifyDigestSignature({ ...digest, signature }, keyring.jwks)).to.deep.equal({
        ok: false,
        reason: 'malformed',
      });
    }
  });

  it('stays verifiable on the digest keys once its key is retired, for digests recorded before', () => {
    const byFirst = { ...fields, signature: signDigest(first, fields) };
    retireKey(file, first.kid, new Date('2026-06-01T00:00:00Z'));
    const retired = keyringOf(readKeys(file));
    expect(retired.jwks.keys.map((key) => key.kid)).to.deep.equal([second.kid]);
    expect(verifyDigestSignature(byFirst, retired.jwks)).to.deep.equal({ ok: false, reason: 'unknown-key' });
    expect(verifyDigestSignature(byFirst, retired.digestJwks)).to.deep.equal({ ok: true, kid: first.kid });
    const after = { ...fields, recordedAt: '2026-07-01T00:00:00.000Z' };
    const lateButSigned = { ...after, signature: signDigest(first, after) };
    expect(verifyDigestSignature(lateButSigned, retired.digestJwks)).to.deep.equal({
      ok: false,
      reason: 'retired-key',
    });
  });
});

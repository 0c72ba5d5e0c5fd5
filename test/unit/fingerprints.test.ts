import { expect } from 'chai';
import { keyringOf, rotateKeys, readKeys } from '../../src/auth/signing-keys.js';
import { loadConfig } from '../../src/config.js';
import { parseRemoteModelSettings } from '../../src/cv/models/remote-settings.js';
import { agreedFingerprints } from '../../src/fingerprints/agreed.js';
import {
  keyringFingerprints,
  modelsFingerprint,
  secretFingerprint,
  verdict,
} from '../../src/fingerprints/fingerprint.js';
import { tempDir } from '../support/adapters.js';
import { join } from 'node:path';

describe('the fingerprints of the shared secrets', () => {
  it('reveal neither the secret nor one secret under another setting’s name', () => {
    const secret = 'a-webhook-secret-key-0123456789abcdef';
    const fingerprint = secretFingerprint('WEBHOOK_SECRET_KEY', secret);
    expect(fingerprint).to.match(/^hmac-sha256:[A-Za-z0-9_-]{43}$/);
    expect(fingerprint).not.to.include(secret);
    expect(secretFingerprint('WEBHOOK_SECRET_KEY', secret)).to.equal(fingerprint);
    expect(secretFingerprint('CURSOR_SECRET', secret)).not.to.equal(fingerprint);
    expect(secretFingerprint('WEBHOOK_SECRET_KEY', `${secret}x`)).not.to.equal(fingerprint);
  });

  describe('compared with the recorded ones', () => {
    it('are recorded when none is, and pass when equal', () => {
      expect(verdict(undefined, ['a'])).to.equal('record');
      expect(verdict('a', ['a'])).to.equal('same');
      expect(verdict('a,b', ['b', 'a'])).to.equal('same');
    });

    it('refuse a secret that differs', () => {
      expect(verdict('a', ['b'])).to.equal('mismatch');
    });

    it('follow a keyring rotated or retired, which shares a key with the recorded one, and refuse one that shares none', () => {
      const { dir, remove } = tempDir();
      try {
        const file = join(dir, 'keys.json');
        rotateKeys(file);
        const before = keyringFingerprints(keyringOf(readKeys(file)));
        rotateKeys(file);
        const rotated = keyringFingerprints(keyringOf(readKeys(file)));
        expect(rotated).to.have.length(2);
        expect(verdict(before.join(','), rotated)).to.equal('update');
        const retired = rotated.filter((value) => !before.includes(value));
        expect(verdict(rotated.join(','), retired)).to.equal('update');
        const other = join(dir, 'other.json');
        rotateKeys(other);
        expect(verdict(rotated.join(','), keyringFingerprints(keyringOf(readKeys(other))))).to.equal(
          'mismatch',
        );
      } finally {
        remove();
      }
    });
  });

  describe('of the remote CV models', () => {
    const models = (entries: Record<string, unknown>[]) =>
      modelsFingerprint(parseRemoteModelSettings(entries));
    const birds = {
      name: 'birds',
      url: 'http://10.0.0.1:8000',
      returns: { detections: 'detections', summary: {} },
    };
    const plates = { name: 'plates', url: 'http://10.0.0.1:8001', timeout: '5s' };

    it('are the same whatever the order, the url, the time-out or a password in the url', () => {
      const fingerprint = models([birds, plates]);
      expect(fingerprint).to.match(/^sha256:[A-Za-z0-9_-]{43}$/);
      expect(models([plates, birds])).to.equal(fingerprint);
      expect(
        models([
          { ...birds, url: 'http://user:secret@127.0.0.1:9000/v2' },
          { ...plates, timeout: '60s' },
        ]),
      ).to.equal(fingerprint);
    });

    it('differ when a model is missing, renamed, or answers or means something else', () => {
      const fingerprint = models([birds, plates]);
      const others = [
        models([birds]),
        models([]),
        models([birds, { ...plates, name: 'plates-2' }]),
        models([birds, { ...plates, remoteName: 'plates_v2' }]),
        models([birds, { ...plates, modelVersion: '2' }]),
        models([birds, { ...plates, description: 'number plates' }]),
        models([{ ...birds, returns: { detections: 'boxes', summary: {} } }, plates]),
        models([
          birds,
          {
            ...plates,
            protocol: 'tensor',
            input: { name: 'images', width: 640, height: 640 },
            output: { name: 'output0', format: 'yolov8' },
          },
        ]),
      ];
      expect(new Set([fingerprint, ...others]).size).to.equal(others.length + 1);
    });
  });

  describe('of the settings that are no secret but must agree', () => {
    const config = (env: Record<string, string> = {}) => loadConfig({ DATA_DIR: '/tmp/unused', ...env });
    const names = (fingerprints: { name: string }[]) => fingerprints.map((fingerprint) => fingerprint.name);

    it('are the values themselves, the API’s own only for a process that serves it', () => {
      const api = agreedFingerprints(config({ WEBHOOK_ALLOW_HTTP: 'true' }), { servesApi: true });
      expect(api.find((fingerprint) => fingerprint.name === 'WEBHOOK_ALLOW_HTTP')?.values).to.deep.equal([
        'true',
      ]);
      expect(api.find((fingerprint) => fingerprint.name === 'TOKEN_AUDIENCE')?.values).to.deep.equal([
        'observation-service',
      ]);
      expect(names(agreedFingerprints(config(), { servesApi: false }))).not.to.include('TOKEN_AUDIENCE');
    });

    it('count the effective value: WEBHOOK_ALLOW_LOOPBACK differs between production and development', () => {
      const loopback = (env: Record<string, string>) =>
        agreedFingerprints(config(env), { servesApi: false }).find(
          (fingerprint) => fingerprint.name === 'WEBHOOK_ALLOW_LOOPBACK',
        )?.values;
      expect(loopback({})).to.deep.equal(['true']);
      expect(loopback({ WEBHOOK_ALLOW_LOOPBACK: 'false' })).to.deep.equal(['false']);
    });

    it('are left out for `obs secrets record` unless its environment sets them', () => {
      expect(agreedFingerprints(config(), { servesApi: true, onlyGiven: true })).to.deep.equal([]);
      expect(
        names(
          agreedFingerprints(config({ MEDIA_MAX_PIXELS: '1000000' }), { servesApi: true, onlyGiven: true }),
        ),
      ).to.deep.equal(['MEDIA_MAX_PIXELS']);
    });
  });
});

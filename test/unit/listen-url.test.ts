import { expect } from 'chai';
import { listenUrl, loadConfig } from '../../src/config.js';

describe('PUBLIC_URL when unset', () => {
  it('is the address the service listens on, so the README’s http://127.0.0.1:3000 is the issuer', () => {
    expect(loadConfig({ DATA_DIR: '/tmp/unused' }).publicUrl).to.equal('http://127.0.0.1:3000');
    expect(loadConfig({ DATA_DIR: '/tmp/unused', HOST: 'obs.internal', PORT: '8080' }).publicUrl).to.equal(
      'http://obs.internal:8080',
    );
  });

  it('puts an IPv6 address in brackets, and stands loopback for a wildcard address', () => {
    expect(listenUrl('::1', 3000)).to.equal('http://[::1]:3000');
    expect(listenUrl('0.0.0.0', 3000)).to.equal('http://127.0.0.1:3000');
    expect(listenUrl('::', 3000)).to.equal('http://127.0.0.1:3000');
  });

  it('is PUBLIC_URL when set', () => {
    expect(
      loadConfig({ DATA_DIR: '/tmp/unused', PUBLIC_URL: 'https://obs.example.com/' }).publicUrl,
    ).to.equal('https://obs.example.com');
  });
});

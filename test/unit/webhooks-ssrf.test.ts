import { expect } from 'chai';
import { isForbiddenAddress } from '../../src/webhooks/ssrf.js';

/** Addresses as strings only: nothing here connects anywhere. */
const expectForbidden = (addresses: string[]) => {
  for (const address of addresses) expect(isForbiddenAddress(address), address).to.equal(true);
};
const expectAllowed = (addresses: string[]) => {
  for (const address of addresses) expect(isForbiddenAddress(address), address).to.equal(false);
};

describe('the SSRF address rules', () => {
  it('refuse IPv4 loopback, private, link-local, carrier-grade NAT and unspecified addresses', () => {
    expectForbidden([
      '127.0.0.1',
      '127.255.255.254',
      '10.0.0.1',
      '10.255.255.255',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.0.1',
      '192.168.255.255',
      '169.254.0.1',
      '100.64.0.1',
      '100.127.255.255',
      '0.0.0.0',
      '0.1.2.3',
    ]);
  });

  it('refuse cloud metadata addresses', () => {
    expectForbidden(['169.254.169.254', '169.254.170.2', '100.100.100.200', '192.0.0.192', 'fd00:ec2::254']);
  });

  it('refuse IPv4 multicast, broadcast, reserved and documentation ranges', () => {
    expectForbidden([
      '224.0.0.1',
      '239.255.255.250',
      '240.0.0.1',
      '255.255.255.255',
      '192.0.2.1',
      '198.51.100.7',
      '203.0.113.9',
      '198.18.0.1',
    ]);
  });

  it('allow the neighbours of the private ranges and public IPv4 addresses', () => {
    expectAllowed([
      '172.15.255.255',
      '172.32.0.1',
      '11.0.0.1',
      '100.63.255.255',
      '100.128.0.1',
      '93.184.216.34',
      '8.8.8.8',
    ]);
  });

  it('refuse IPv6 loopback, unspecified, unique-local, link-local, site-local and multicast addresses', () => {
    expectForbidden([
      '::1',
      '::',
      'fc00::1',
      'fd12:3456::1',
      'fe80::1',
      'febf::1',
      'fec0::1',
      'ff02::1',
      'ff0e::1',
    ]);
  });

  it('refuse documentation, Teredo and 6to4 IPv6 addresses', () => {
    expectForbidden(['2001:db8::1', '2001::1', '2002:7f00:1::1']);
  });

  it('allow public IPv6 addresses', () => {
    expectAllowed(['2606:4700::1111', '2001:4860:4860::8888', '2a00:1450:4001::1']);
  });

  it('refuse private IPv4 addresses written as IPv4-mapped IPv6, in dotted and in hex form', () => {
    expectForbidden([
      '::ffff:127.0.0.1',
      '::FFFF:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      '::ffff:a00:1',
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
      '::ffff:0.0.0.0',
      '0:0:0:0:0:ffff:7f00:1',
    ]);
  });

  it('allow public IPv4 addresses written as IPv4-mapped IPv6', () => {
    expectAllowed(['::ffff:93.184.216.34', '::ffff:5db8:d822']);
  });

  it('refuse the IPv4-compatible and IPv4-translated forms of private addresses', () => {
    expectForbidden(['::127.0.0.1', '::7f00:1', '::ffff:0:7f00:1', '::ffff:0:a9fe:a9fe']);
  });

  it('refuse NAT64 addresses (64:ff9b::/96 and the local-use 64:ff9b:1::/48)', () => {
    expectForbidden([
      '64:ff9b::7f00:1',
      '64:ff9b::127.0.0.1',
      '64:ff9b::a9fe:a9fe',
      '64:ff9b::5db8:d822',
      '64:ff9b:1::1',
    ]);
  });

  it('read bracketed literals and zone ids, and refuse what is not an address at all', () => {
    expectForbidden(['[::1]', '[::ffff:127.0.0.1]', 'fe80::1%eth0', 'localhost', 'example.com', '', '1.2.3']);
    expectAllowed(['[2606:4700::1111]']);
  });
});

import { BlockList, isIP } from 'node:net';

/**
 * What a refused receiver URL's host is told, whatever the reason: a private or reserved address, a name
 * that resolves to one, a name that does not resolve. One text, so that URL validation is no DNS oracle;
 * it names the settings a developer would be looking for, which says nothing about this host.
 */
export const hostNotAllowed =
  'has a host that is not allowed: it must resolve to public addresses only (loopback receivers are allowed outside NODE_ENV=production, or with WEBHOOK_ALLOW_LOOPBACK=true; other private networks need WEBHOOK_ALLOW_PRIVATE_NETWORKS=true)';

/**
 * Addresses a webhook may never reach: loopback, private, link-local (cloud metadata lives there),
 * carrier-grade NAT, multicast, unspecified, reserved and documentation ranges, in IPv4 and IPv6, and
 * IPv4 written inside IPv6 (mapped, compatible, translated, NAT64, 6to4).
 */
const blocked = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  // IPv4-translated (SIIT, ::ffff:0:a.b.c.d): a third way to write an IPv4 address inside IPv6, which the
  // mapped and compatible forms below do not cover.
  ['::ffff:0:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv6');
}

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d) or IPv4-compatible (::a.b.c.d) IPv6 address. */
const embeddedIpv4 = (address: string): string | null => {
  const match = /^::(?:ffff:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (match) return match[1]!;
  const hex = /^::(?:ffff:)?([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return null;
  const high = parseInt(hex[1]!, 16);
  const low = parseInt(hex[2]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
};

/**
 * Whether an address, bracketed or with a zone, is in the list, an IPv4 one also when written inside IPv6;
 * `otherwise` for what is not an IP address at all.
 */
const listed = (list: BlockList, address: string, otherwise: boolean): boolean => {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return list.check(bare, 'ipv4');
  if (family === 6) {
    const inner = embeddedIpv4(bare.toLowerCase());
    return inner !== null ? list.check(inner, 'ipv4') : list.check(bare, 'ipv6');
  }
  return otherwise;
};

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/** 127.0.0.0/8 or ::1, also written inside IPv6: the machine itself, which development receivers use. */
export const isLoopbackAddress = (address: string): boolean => listed(loopback, address, false);

/** Which addresses a receiver may have, under the settings (WEBHOOK_ALLOW_LOOPBACK, …_PRIVATE_NETWORKS). */
export interface AddressRules {
  allowPrivateNetworks: boolean;
  allowLoopback: boolean;
}

export const isAllowedAddress = (address: string, rules: AddressRules): boolean =>
  rules.allowPrivateNetworks ||
  !isForbiddenAddress(address) ||
  (rules.allowLoopback && isLoopbackAddress(address));

// Not an address at all: refused rather than guessed at.
export const isForbiddenAddress = (address: string): boolean => listed(blocked, address, true);

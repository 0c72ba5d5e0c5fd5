import type { KeyObject } from 'node:crypto';
import type { EventStore } from '../eventstore/port.js';
import type { AuditDigest } from './digest.js';
import { checkDigestSignature } from './digest-signature.js';
import { tenantLog } from './log-events.js';
import { emptyFrontier, logBuilder } from './log-tree.js';

export interface StoredDigest extends AuditDigest {
  /** When it was recorded (its event's occurredAt): part of what the signature covers. */
  recordedAt: string;
}

/**
 * Why each version 2 digest fails its log tree or its signature (null: it holds, or it is a version 1
 * digest, which has neither). One read of the tenant in commit order, up to the newest digest, holding one
 * node per level of the tree; digests are in upToPosition order.
 */
export const logFailures = async (
  eventStore: EventStore,
  tenantId: string,
  digests: readonly StoredDigest[],
  keys: ReadonlyMap<string, KeyObject>,
  onPage: () => void,
): Promise<(string | null)[]> => {
  const failures = digests.map((digest) => signatureFailure(tenantId, digest, keys));
  const signed = digests.flatMap((digest, index) => (digest.log ? [{ digest, index }] : []));
  const last = signed.at(-1);
  if (!last) return failures;
  const tree = logBuilder(emptyFrontier);
  let next = 0;
  const checkUpTo = (position: number) => {
    for (; next < signed.length && signed[next]!.digest.upToPosition < position; next += 1) {
      const { digest, index } = signed[next]!;
      const { size } = tree.frontier();
      if (size !== digest.log!.size || tree.root().toString('hex') !== digest.log!.root) {
        failures[index] ??=
          `the log tree of ${digest.log!.size} events up to position ${digest.upToPosition} does not match the history (${size} events, another root)`;
      }
    }
  };
  for await (const page of tenantLog(eventStore, tenantId, 0, last.digest.upToPosition)) {
    onPage();
    for (const event of page) {
      checkUpTo(event.position);
      // Not leafInputOf: a malformed hash is a broken chain to report, not an error to throw.
      tree.add(Buffer.from(event.hash ?? '', 'hex'));
    }
  }
  checkUpTo(Infinity);
  return failures;
};

const signatureFailure = (
  tenantId: string,
  digest: StoredDigest,
  keys: ReadonlyMap<string, KeyObject>,
): string | null => {
  if (!digest.log) return null;
  if (!digest.signature)
    return `the digest up to position ${digest.upToPosition} has a log tree but no signature`;
  const check = checkDigestSignature(
    digest.signature,
    {
      tenantId,
      position: digest.upToPosition,
      size: digest.log.size,
      logRoot: digest.log.root,
      headsRoot: digest.root,
      streams: digest.streams,
      recordedAt: digest.recordedAt,
    },
    keys,
  );
  return check === 'ok'
    ? null
    : `the signature of the digest up to position ${digest.upToPosition}: ${check}`;
};

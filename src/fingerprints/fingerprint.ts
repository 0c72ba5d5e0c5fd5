import { createHash, createHmac, createPublicKey } from 'node:crypto';
import type { Keyring } from '../auth/signing-keys.js';
import type { RemoteModelSetting } from '../cv/models/remote-settings.js';
import { canonicalJson } from '../eventstore/hash-chain.js';

/**
 * Values every process on one store must share, as fingerprints that reveal nothing usable: for a secret an
 * HMAC of a fixed label keyed by it, for the signing keyring a hash of each public key, for the remote CV
 * models a hash of their descriptions; settings that are no secret (PUBLIC_URL, issuer.ts; the others,
 * agreed.ts) as they are. The first process on a store records them; a later one whose values differ
 * refuses to start (check.ts). Background: docs/operations.md#shared-secrets.
 */

/** A fingerprinted setting as one process has it: the fingerprints it accepts, as a sorted set. */
export interface Fingerprint {
  /** The setting's name, e.g. WEBHOOK_SECRET_KEY. */
  name: string;
  /** One for a secret; one per active key for the keyring. */
  values: readonly string[];
  /** True when the value came from the environment, false when generated into DATA_DIR. */
  given: boolean;
  /**
   * Set for a value that may change between runs (PUBLIC_URL, issuer.ts): the record stands only while
   * the processes that have it renew it, at least this often; a record older than this is taken over.
   */
  renewedWithinMs?: number;
  /** Set for a setting compared as it is (agreed.ts): what goes wrong when two processes differ. */
  agreed?: { why: string };
}

/** A fingerprint as a store keeps it. */
export interface RecordedFingerprint {
  name: string;
  /** The sorted values joined by commas. */
  fingerprint: string;
  recordedAt: string;
  /** Who recorded it, for the message: host, pid and DATA_DIR. */
  recordedBy: string;
}

const label = 'observation-service settings fingerprint v1';

/** HMAC-SHA256 of a fixed label (with the setting's name) keyed by the secret; never the secret itself. */
export const secretFingerprint = (name: string, secret: string): string =>
  `hmac-sha256:${createHmac('sha256', secret).update(`${label} ${name}`).digest('base64url')}`;

/** SHA-256 of each active key's public key: the keyring's keys, not their private parts. */
export const keyringFingerprints = (keyring: Keyring): string[] =>
  [...keyring.verifying.values()]
    .map(
      (pem) =>
        `spki-sha256:${createHash('sha256')
          .update(createPublicKey(pem).export({ type: 'spki', format: 'der' }))
          .digest('base64url')}`,
    )
    .sort();

/**
 * SHA-256 of the remote models as jobs see them: their names and what each is and answers, in name order.
 * An API process accepts a job for any model it has, and whichever worker claims the job runs it, so every
 * process must have the same models, or a job accepted by one fails `model_unknown` (or reads another
 * model's answer) on another. Left out: `url` and `timeout`, which may rightly differ between machines (an
 * inference server beside each worker), and which may hold a password.
 */
export const modelsFingerprint = (models: readonly RemoteModelSetting[]): string => {
  const described = models
    .map(({ url: _url, timeoutMs: _timeoutMs, ...model }) => model)
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  return `sha256:${createHash('sha256').update(canonicalJson(described)).digest('base64url')}`;
};

export const joined = (values: readonly string[]): string => [...values].sort().join(',');

/**
 * What to do with one setting, given what the store recorded:
 * - `record`: nothing recorded yet, this process is the first;
 * - `same`: as recorded;
 * - `update`: a rotation, the sets share a value (a keyring with a new key, or its old one retired): the
 *   record follows this process, the last one started;
 * - `mismatch`: nothing in common, the process must not start.
 */
export type Verdict = 'record' | 'same' | 'update' | 'mismatch';

export const verdict = (recorded: string | undefined, mine: readonly string[]): Verdict => {
  if (recorded === undefined) return 'record';
  if (recorded === joined(mine)) return 'same';
  const theirs = new Set(recorded.split(','));
  return mine.some((value) => theirs.has(value)) ? 'update' : 'mismatch';
};

/** What an operator does about a mismatch: copy the development files, or set the variable. */
export const remedy = (fingerprint: Fingerprint, recorded: RecordedFingerprint): string => {
  const source = `the first process (${recorded.recordedBy}, ${recorded.recordedAt})`;
  if (fingerprint.name === 'PUBLIC_URL') {
    const running = `a process that runs (${recorded.recordedBy}, last seen ${recorded.recordedAt})`;
    const mine = fingerprint.values.join(',');
    return fingerprint.given
      ? `PUBLIC_URL is ${mine} here but ${recorded.fingerprint} in ${running}, and each refuses the tokens the other issues (their iss): set the one address clients use in every process that serves the API`
      : `PUBLIC_URL is not set, so it is this process's own address, ${mine}, but it is ${recorded.fingerprint} in ${running}, and each refuses the tokens the other issues (their iss): set PUBLIC_URL to the one address clients use (a load balancer's) in every process that serves the API, or start this one once that one has stopped`;
  }
  if (fingerprint.agreed) {
    return `${fingerprint.name} is ${fingerprint.values.join(',')} here but ${recorded.fingerprint} in ${source}, and ${fingerprint.agreed.why}: set it alike in every process, or after changing it on purpose stop them, run \`obs secrets record\` with the new value, and start them again`;
  }
  if (fingerprint.name === 'CV_REMOTE_MODELS') {
    return `CV_REMOTE_MODELS (or CV_MODELS_FILE) does not describe the same models as that of ${source}: give every process the same models (only their url and timeout may differ), or after changing them on purpose stop the processes, run \`obs secrets record\` with the new ones, and start them again`;
  }
  if (fingerprint.name === 'SIGNING_KEYS_FILE') {
    return fingerprint.given
      ? `SIGNING_KEYS_FILE shares no key with the keyring of ${source}: give every process the same file`
      : `the development keyring DATA_DIR/signing-keys.json shares no key with the keyring of ${source}: copy its DATA_DIR/signing-keys.json here, or set SIGNING_KEYS_FILE to a file every process reads`;
  }
  return fingerprint.given
    ? `${fingerprint.name} is not the one of ${source}: set it to the same value in every process`
    : `${fingerprint.name} was generated into this DATA_DIR/secrets.json and differs from the one of ${source}: copy its DATA_DIR/secrets.json here, or set ${fingerprint.name} in every process`;
};

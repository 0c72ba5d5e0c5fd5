import { hostname } from 'node:os';
import { resolve } from 'node:path';
import type { Keyring } from '../auth/signing-keys.js';
import type { Config } from '../config.js';
import type { RemoteModelSetting } from '../cv/models/remote-settings.js';
import { developmentSecret, existingDevelopmentSecret } from '../core/development-secrets.js';
import { ConfigError } from '../settings.js';
import {
  joined,
  keyringFingerprints,
  modelsFingerprint,
  remedy,
  secretFingerprint,
  verdict,
  type Verdict,
  type Fingerprint,
  type RecordedFingerprint,
} from './fingerprint.js';
import { issuerFingerprint } from './issuer.js';
import type { FingerprintStore } from './store.js';

/** The values a process runs with that every other process on its store must share. */
export interface SharedValues<Value = string> {
  platformAdminKey: { value: Value; given: boolean };
  cursorSecret: { value: Value; given: boolean };
  webhookSecretKey: { value: Value; given: boolean };
  idempotencySecretKey: { value: Value; given: boolean };
  keyring: { value: Keyring; given: boolean };
  /** CV_REMOTE_MODELS or CV_MODELS_FILE: never generated, an empty list when neither is set. */
  remoteModels: readonly RemoteModelSetting[];
  /** PUBLIC_URL, the tokens' issuer, of a process that serves the API; null for one that does not. */
  issuer: { value: string; given: boolean } | null;
}

type SecretsConfig = Pick<
  Config,
  | 'dataDir'
  | 'platformAdminKey'
  | 'cursorSecret'
  | 'idempotencySecretKey'
  | 'role'
  | 'publicUrl'
  | 'givenSettings'
> & {
  webhooks: Pick<Config['webhooks'], 'secretKey'>;
  cv: Pick<Config['cv'], 'remoteModels'>;
};

const valuesWith = <Value>(
  config: SecretsConfig,
  keyring: Keyring,
  developmentValue: (name: string) => Value,
  issuer: SharedValues['issuer'],
): SharedValues<Value> => {
  const secret = (given: string | null, name: string) =>
    given !== null ? { value: given as Value, given: true } : { value: developmentValue(name), given: false };
  return {
    platformAdminKey: secret(config.platformAdminKey, 'platformAdminKey'),
    cursorSecret: secret(config.cursorSecret, 'cursorSecret'),
    webhookSecretKey: secret(config.webhooks.secretKey, 'webhookSecretKey'),
    idempotencySecretKey: secret(config.idempotencySecretKey, 'idempotencySecretKey'),
    keyring: { value: keyring, given: config.givenSettings.has('SIGNING_KEYS_FILE') },
    remoteModels: config.cv.remoteModels,
    issuer,
  };
};

/**
 * The secrets as this process uses them: given, or generated into DATA_DIR/secrets.json in development.
 * `onPlatformKeyCreated` hears a platform key generated just now (it is logged once).
 */
export const sharedValues = (
  config: SecretsConfig,
  keyring: Keyring,
  onPlatformKeyCreated?: (key: string) => void,
): SharedValues =>
  valuesWith(
    config,
    keyring,
    (name) =>
      developmentSecret(config.dataDir, name, name === 'platformAdminKey' ? onPlatformKeyCreated : undefined),
    config.role === 'worker'
      ? null
      : { value: config.publicUrl, given: config.givenSettings.has('PUBLIC_URL') },
  );

/**
 * For the CLI: a secret neither given nor in DATA_DIR/secrets.json is left out (null), never made up; and
 * PUBLIC_URL, whose record stands only while the API processes that have it run (issuer.ts).
 */
export const existingSharedValues = (config: SecretsConfig, keyring: Keyring): SharedValues<string | null> =>
  valuesWith(config, keyring, (name) => existingDevelopmentSecret(config.dataDir, name) ?? null, null);

/** The secrets fingerprinted besides the keyring (SIGNING_KEYS_FILE). */
export const sharedSecretNames = [
  'PLATFORM_ADMIN_KEY',
  'CURSOR_SECRET',
  'WEBHOOK_SECRET_KEY',
  'IDEMPOTENCY_SECRET_KEY',
] as const;

/** The fingerprints of the values there are (a secret the CLI could not find is left out). */
export const fingerprintsOf = (shared: SharedValues<string | null>): Fingerprint[] => {
  const secret = (name: string, { value, given }: { value: string | null; given: boolean }) =>
    value === null ? [] : [{ name, values: [secretFingerprint(name, value)], given }];
  return [
    ...secret('PLATFORM_ADMIN_KEY', shared.platformAdminKey),
    ...secret('CURSOR_SECRET', shared.cursorSecret),
    ...secret('WEBHOOK_SECRET_KEY', shared.webhookSecretKey),
    ...secret('IDEMPOTENCY_SECRET_KEY', shared.idempotencySecretKey),
    {
      name: 'SIGNING_KEYS_FILE',
      values: keyringFingerprints(shared.keyring.value),
      given: shared.keyring.given,
    },
    { name: 'CV_REMOTE_MODELS', values: [modelsFingerprint(shared.remoteModels)], given: true },
    ...(shared.issuer ? [issuerFingerprint(shared.issuer.value, shared.issuer.given)] : []),
  ];
};

/** Who records, for the message another process gets: enough to find the DATA_DIR to copy. */
export const recorder = (dataDir: string): string =>
  `host ${hostname()}, pid ${process.pid}, DATA_DIR ${resolve(dataDir)}`;

export interface CheckOutcome {
  /** Settings this process recorded first. */
  recorded: string[];
  /** Settings whose record followed a rotation (a keyring that shares a key with the recorded one). */
  updated: string[];
}

/** A record that its processes stopped renewing: none of them runs any more, another value may follow. */
const takenOver = (recorded: RecordedFingerprint | undefined, fingerprint: Fingerprint, now: Date) =>
  recorded !== undefined &&
  fingerprint.renewedWithinMs !== undefined &&
  now.getTime() - Date.parse(recorded.recordedAt) > fingerprint.renewedWithinMs;

/** Two processes may write at once: a lost compare-and-set reads again, a few times at most. */
const attempts = 5;

/**
 * Compares this process's fingerprints with the store's, recording the missing ones. Throws a ConfigError
 * (exit code 2) naming every setting that differs and what to do, before the process serves anything.
 */
export const checkFingerprints = async (
  store: FingerprintStore,
  mine: readonly Fingerprint[],
  by: string,
  now: () => Date = () => new Date(),
): Promise<CheckOutcome> => {
  const judge = (fingerprint: Fingerprint, recorded: RecordedFingerprint | undefined): Verdict =>
    takenOver(recorded, fingerprint, now()) ? 'update' : verdict(recorded?.fingerprint, fingerprint.values);
  const refuse = (mismatches: string[]) =>
    new ConfigError(
      `this process's shared settings differ from those of the other processes on its store (docs/operations.md#shared-secrets): ${mismatches.join('; ')}`,
    );
  // Every setting is compared before any is written: a process refused for one records none of the others
  // (its PUBLIC_URL would otherwise hold the record for a process that never ran).
  const before = await store.read();
  const mismatches = mine.flatMap((fingerprint) => {
    const recorded = before.find((row) => row.name === fingerprint.name);
    return judge(fingerprint, recorded) === 'mismatch' ? [remedy(fingerprint, recorded!)] : [];
  });
  if (mismatches.length > 0) throw refuse(mismatches);
  const outcome: CheckOutcome = { recorded: [], updated: [] };
  for (const fingerprint of mine) {
    for (let attempt = 1; ; attempt += 1) {
      const recorded = (await store.read()).find((row) => row.name === fingerprint.name);
      const row: RecordedFingerprint = {
        name: fingerprint.name,
        fingerprint: joined(fingerprint.values),
        recordedAt: now().toISOString(),
        recordedBy: by,
      };
      const found = judge(fingerprint, recorded);
      if (found === 'same') break;
      // Another process recorded its own since the comparison above.
      if (found === 'mismatch') throw refuse([remedy(fingerprint, recorded!)]);
      const written =
        found === 'record' ? await store.insert(row) : await store.replace(row, recorded!.fingerprint);
      if (written) {
        outcome[found === 'record' ? 'recorded' : 'updated'].push(fingerprint.name);
        break;
      }
      if (attempt === attempts) throw new Error(`${fingerprint.name}: the fingerprint kept changing`);
    }
  }
  return outcome;
};

/**
 * `obs secrets record`: makes this environment's values the recorded ones, whatever was recorded, after
 * a secret was changed on purpose. Returns the settings whose record changed.
 */
export const recordFingerprints = async (
  store: FingerprintStore,
  mine: readonly Fingerprint[],
  by: string,
  now: () => Date = () => new Date(),
): Promise<string[]> => {
  const changed: string[] = [];
  for (const fingerprint of mine) {
    const row: RecordedFingerprint = {
      name: fingerprint.name,
      fingerprint: joined(fingerprint.values),
      recordedAt: now().toISOString(),
      recordedBy: by,
    };
    for (let attempt = 1; ; attempt += 1) {
      const recorded = (await store.read()).find((entry) => entry.name === fingerprint.name);
      if (recorded?.fingerprint === row.fingerprint) break;
      const written = recorded ? await store.replace(row, recorded.fingerprint) : await store.insert(row);
      if (written) {
        changed.push(fingerprint.name);
        break;
      }
      if (attempt === attempts) throw new Error(`${fingerprint.name}: the fingerprint kept changing`);
    }
  }
  return changed;
};

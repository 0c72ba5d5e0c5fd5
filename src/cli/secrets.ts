import { loadKeyring } from '../auth/signing-keys.js';
import {
  existingSharedValues,
  fingerprintsOf,
  recorder,
  recordFingerprints,
  sharedSecretNames,
} from '../fingerprints/check.js';
import { openFingerprintStore } from '../fingerprints/store.js';
import { flags } from './args.js';
import { UsageError, type Commands } from './command.js';
import { requireDataDir, storeLine } from './stores.js';

/**
 * The fingerprints of the secrets (and remote CV models) every process on a store must share
 * (docs/operations.md#shared-secrets). A process whose values differ from the recorded ones refuses to
 * start; after a value was changed on purpose, this records the new ones, and the processes are then
 * restarted with them.
 */
/** Settings with a default, recorded only when this environment sets them. */
const settingsSetHereOnly = ['CV_REMOTE_MODELS', 'TOKEN_AUDIENCE'];

export const secretCommands: Commands = {
  'secrets record': {
    help: "secrets record\n  Records the fingerprints of this environment's secrets and keyring, and of CV_REMOTE_MODELS\n  (or CV_MODELS_FILE) and TOKEN_AUDIENCE when set, as the ones every process on the store must have\n  (after changing one on purpose); never the secrets themselves.",
    run: async (args, { config, create, print }) => {
      flags(args, { options: {} });
      if (!config.eventStoreUrl && !config.databaseUrl) requireDataDir(config.dataDir, create);
      process.stderr.write(`${storeLine(config)}\n`);
      const store = await openFingerprintStore(config);
      if (!store)
        throw new UsageError('EventStoreDB alone keeps no fingerprints: there is nothing to record');
      try {
        const keyring = loadKeyring(config.signingKeysFile, { create: false });
        // The models and the audience only when set here: an environment that sets neither (one that
        // changes a secret) leaves them as the processes have them, rather than recording the defaults.
        const setHere = (name: string) =>
          name === 'CV_REMOTE_MODELS'
            ? config.givenSettings.has(name) || config.givenSettings.has('CV_MODELS_FILE')
            : config.givenSettings.has(name);
        const fingerprints = fingerprintsOf(existingSharedValues(config, keyring)).filter(
          (fingerprint) => !settingsSetHereOnly.includes(fingerprint.name) || setHere(fingerprint.name),
        );
        const changed = await recordFingerprints(
          store,
          fingerprints,
          `obs secrets record, ${recorder(config.dataDir)}`,
        );
        // A secret neither set here nor in DATA_DIR/secrets.json is left as recorded: never made up.
        const missing = sharedSecretNames.filter((name) => !fingerprints.some((f) => f.name === name));
        const notSet = settingsSetHereOnly.filter((name) => !fingerprints.some((f) => f.name === name));
        print(
          [
            changed.length > 0 ? `Recorded ${changed.join(', ')}` : 'Every fingerprint was already recorded',
            ...(missing.length > 0
              ? [`Left as recorded (neither set nor in DATA_DIR/secrets.json): ${missing.join(', ')}`]
              : []),
            ...(notSet.length > 0 ? [`Left as recorded (not set): ${notSet.join(', ')}`] : []),
          ].join('\n'),
          { changed, missing, notSet },
        );
      } finally {
        await store.close();
      }
    },
  },
};

import { loadKeyring } from '../auth/signing-keys.js';
import {
  existingSharedValues,
  fingerprintsOf,
  recorder,
  recordFingerprints,
  sharedSecretNames,
} from '../fingerprints/check.js';
import { agreedFingerprints, agreedSettingNames } from '../fingerprints/agreed.js';
import { openFingerprintStore } from '../fingerprints/store.js';
import { flags } from './args.js';
import { UsageError, type Commands } from './command.js';
import { requireDataDir, storeLine } from './stores.js';

/** Settings with a default, recorded only when this environment sets them. */
const settingsSetHereOnly = ['CV_REMOTE_MODELS', ...agreedSettingNames];

/**
 * The fingerprints of the secrets and other settings every process on a store must share
 * (docs/operations.md#shared-secrets). A process whose values differ from the recorded ones refuses to
 * start; after a value was changed on purpose, this records the new ones, and the processes are then
 * restarted with them.
 */
export const secretCommands: Commands = {
  'secrets record': {
    help: "secrets record\n  Records the fingerprints of this environment's secrets and keyring, and of the other shared\n  settings it sets (CV_REMOTE_MODELS, TOKEN_AUDIENCE, WEBHOOK_ALLOW_*, MEDIA_MAX_PIXELS, …), as the ones\n  every process on the store must have (after changing one on purpose); never the secrets themselves.",
    run: async (args, { config, create, print }) => {
      flags(args, { options: {} });
      if (!config.eventStoreUrl && !config.databaseUrl) requireDataDir(config.dataDir, create);
      process.stderr.write(`${storeLine(config)}\n`);
      const store = await openFingerprintStore(config);
      if (!store)
        throw new UsageError('EventStoreDB alone keeps no fingerprints: there is nothing to record');
      try {
        const keyring = loadKeyring(config.signingKeysFile, { create: false });
        // The models and the agreed settings only when set here: an environment that sets none of them
        // (one that changes a secret) leaves them as the processes have them, rather than recording defaults.
        const modelsSet =
          config.givenSettings.has('CV_REMOTE_MODELS') || config.givenSettings.has('CV_MODELS_FILE');
        const fingerprints = [
          ...fingerprintsOf(existingSharedValues(config, keyring)).filter(
            (fingerprint) => fingerprint.name !== 'CV_REMOTE_MODELS' || modelsSet,
          ),
          ...agreedFingerprints(config, { servesApi: true, onlyGiven: true }),
        ];
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

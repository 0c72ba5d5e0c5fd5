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
export const secretCommands: Commands = {
  'secrets record': {
    help: "secrets record\n  Records the fingerprints of this environment's secrets, keyring and remote CV models as the ones every\n  process on the store must have (after changing one on purpose); never the secrets themselves.",
    run: async (args, { config, create, print }) => {
      flags(args, { options: {} });
      if (!config.eventStoreUrl && !config.databaseUrl) requireDataDir(config.dataDir, create);
      process.stderr.write(`${storeLine(config)}\n`);
      const store = await openFingerprintStore(config);
      if (!store)
        throw new UsageError('EventStoreDB alone keeps no fingerprints: there is nothing to record');
      try {
        const keyring = loadKeyring(config.signingKeysFile, { create: false });
        const fingerprints = fingerprintsOf(existingSharedValues(config, keyring));
        const changed = await recordFingerprints(
          store,
          fingerprints,
          `obs secrets record, ${recorder(config.dataDir)}`,
        );
        // A secret neither set here nor in DATA_DIR/secrets.json is left as recorded: never made up.
        const missing = sharedSecretNames.filter((name) => !fingerprints.some((f) => f.name === name));
        print(
          [
            changed.length > 0 ? `Recorded ${changed.join(', ')}` : 'Every fingerprint was already recorded',
            ...(missing.length > 0
              ? [`Left as recorded (neither set nor in DATA_DIR/secrets.json): ${missing.join(', ')}`]
              : []),
          ].join('\n'),
          { changed, missing },
        );
      } finally {
        await store.close();
      }
    },
  },
};

import { readKeys, retireKey, rotateKeys } from '../auth/signing-keys.js';
import { UsageError, type Commands } from './command.js';

/** The token signing keyring in SIGNING_KEYS_FILE: a file, so these commands open no store. */
export const keyCommands: Commands = {
  'keys list': {
    help: 'keys list\n  Lists the signing keys in SIGNING_KEYS_FILE (never their private parts).',
    run: (_args, config, print) => {
      const keys = readKeys(config.signingKeysFile).map(({ kid, createdAt, retiredAt }) => ({
        kid,
        createdAt,
        retiredAt,
      }));
      print(
        keys
          .map((k) => `${k.kid}  created ${k.createdAt}${k.retiredAt ? `  retired ${k.retiredAt}` : ''}`)
          .join('\n') || '(no keys)',
        keys,
      );
      return Promise.resolve();
    },
  },
  'keys rotate': {
    help: 'keys rotate\n  Adds a new ES256 key. Running services reload the file: the new key signs, the old ones still verify.',
    run: (_args, config, print) => {
      const key = rotateKeys(config.signingKeysFile);
      print(`New signing key ${key.kid}`, { kid: key.kid, createdAt: key.createdAt });
      return Promise.resolve();
    },
  },
  'keys retire': {
    help: 'keys retire <kid>\n  Retires a key: tokens signed with it stop verifying.',
    run: (args, config, print) => {
      const kid = args[0];
      if (!kid || args.length > 1) throw new UsageError('keys retire needs exactly one <kid>');
      if (!retireKey(config.signingKeysFile, kid))
        throw new UsageError(`No active key ${kid}; see "keys list"`);
      print(`Retired ${kid}`, { kid, retired: true });
      return Promise.resolve();
    },
  },
};

import { resolve } from 'node:path';
import { readKeys, retireKey, rotateKeys, type SigningKey } from '../auth/signing-keys.js';
import { flags } from './args.js';
import { UsageError, type Commands, type Context } from './command.js';
import { table } from './output.js';
import { requireDataDir } from './stores.js';

/**
 * The token signing keyring in SIGNING_KEYS_FILE: a file, so these commands open no store. The file they use
 * is named on stderr, as the other commands name their stores; the default one, in DATA_DIR, needs that
 * directory to exist (or `--create`), as the stores do.
 */
const keyringFile = ({ config, create }: Pick<Context, 'config' | 'create'>): string => {
  if (!config.givenSettings.has('SIGNING_KEYS_FILE')) requireDataDir(config.dataDir, create);
  process.stderr.write(`obs: keys ${resolve(config.signingKeysFile)}\n`);
  return config.signingKeysFile;
};

/** The newest active key signs (src/auth/signing-keys.ts); the other active ones only verify. */
const withUse = (keys: readonly SigningKey[]) => {
  const signing = keys.filter((key) => key.retiredAt === null).at(-1);
  return keys.map(({ kid, createdAt, retiredAt }) => ({
    kid,
    createdAt,
    retiredAt,
    signing: kid === signing?.kid,
  }));
};

export const keyCommands: Commands = {
  'keys list': {
    help: 'keys list\n  Lists the signing keys in SIGNING_KEYS_FILE (never their private parts), oldest first; the newest active\n  one signs new tokens, every active one verifies.',
    run: (args, { print, ...context }) => {
      flags(args, { options: {} });
      const keys = withUse(readKeys(keyringFile(context)));
      const rows = keys.map((k) => [
        k.kid,
        k.createdAt,
        k.retiredAt ? `retired ${k.retiredAt}` : k.signing ? 'signing (newest active)' : 'verifying',
      ]);
      print(keys.length > 0 ? table([['kid', 'created', 'status'], ...rows]) : '(no keys)', keys);
      return Promise.resolve();
    },
  },
  'keys rotate': {
    help: 'keys rotate\n  Adds a new ES256 key. Running services reload the file: the new key signs, the old ones still verify.',
    run: (args, { print, ...context }) => {
      flags(args, { options: {} });
      const key = rotateKeys(keyringFile(context));
      print(`New signing key ${key.kid}`, { kid: key.kid, createdAt: key.createdAt });
      return Promise.resolve();
    },
  },
  'keys retire': {
    help: 'keys retire <kid>\n  Retires a key: tokens signed with it stop verifying. The only active key cannot be retired: rotate first.',
    run: (args, { print, ...context }) => {
      const { positionals } = flags(args, { allowPositionals: true, options: {} });
      const kid = positionals[0];
      if (!kid || positionals.length > 1) throw new UsageError('keys retire needs exactly one <kid>');
      const file = keyringFile(context);
      const active = readKeys(file).filter((key) => key.retiredAt === null);
      if (!active.some((key) => key.kid === kid))
        throw new UsageError(`No active key ${kid}; see "obs keys list"`);
      // retireKey refuses this too; said here as the operator's mistake (exit code 2), with the way out.
      if (active.length === 1) throw new UsageError(`${kid} is the only active key: rotate first`);
      retireKey(file, kid);
      print(`Retired ${kid}`, { kid, retired: true });
      return Promise.resolve();
    },
  },
};

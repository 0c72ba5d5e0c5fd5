import { declare, namedSettings, text } from './declare.js';

/**
 * What NODE_ENV=production takes as a secret (every secret but the key file's path): at least 32
 * characters, at least 10 of them different, so that `x`, `short` or 40 times the same character stop the
 * service. `openssl rand -hex 32` passes.
 */
export const minSecretLength = 32;
export const minDistinctCharacters = 10;
const secretForm = `in production a random text of at least ${minSecretLength} characters, ${minDistinctCharacters} of them different (\`openssl rand -hex 32\`)`;
const generated = 'generated in development (`DATA_DIR/secrets.json`)';

/** A secret: required in production, and never logged. */
const secret = (description: string, defaultShown = generated) =>
  declare({
    default: null,
    defaultShown,
    expected: secretForm,
    description,
    requiredInProduction: true,
    secret: true,
    parse: text,
  });

/** The secrets: each required in production, generated in development. */
export const secretSettings = namedSettings({
  PLATFORM_ADMIN_KEY: secret("the platform operator's API key: creates tenants", `${generated}, logged once`),
  CURSOR_SECRET: secret('signs list cursors'),
  SIGNING_KEYS_FILE: declare({
    default: null,
    defaultShown: '`DATA_DIR/signing-keys.json`, created in development',
    expected: 'the path of a keyring made by `obs keys rotate`',
    description: 'the ES256 keys that sign access tokens; every instance reads the same file',
    requiredInProduction: true,
    parse: text,
  }),
  WEBHOOK_SECRET_KEY: secret("seals the webhook subscriptions' signing secrets in their events"),
  IDEMPOTENCY_SECRET_KEY: secret('seals the kept `Idempotency-Key` answers (AES-256-GCM)'),
});

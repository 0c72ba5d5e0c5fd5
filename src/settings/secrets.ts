import { declare, text } from './declare.js';

/**
 * What NODE_ENV=production takes as a secret (every secret but the key file's path): at least 32
 * characters, at least 10 of them different, so that `x`, `short` or 40 times the same character stop the
 * service. `openssl rand -hex 32` passes.
 */
export const minSecretLength = 32;
export const minDistinctCharacters = 10;
const secretForm = `in production a random text of at least ${minSecretLength} characters, ${minDistinctCharacters} of them different (\`openssl rand -hex 32\`)`;
const generated = 'generated in development (`DATA_DIR/secrets.json`)';

/** The secrets: each required in production, generated in development. */
export const secretSettings = {
  PLATFORM_ADMIN_KEY: declare('PLATFORM_ADMIN_KEY')({
    default: null,
    defaultShown: `${generated}, logged once`,
    expected: secretForm,
    description: "the platform operator's API key: creates tenants",
    requiredInProduction: true,
    secret: true,
    parse: text,
  }),
  CURSOR_SECRET: declare('CURSOR_SECRET')({
    default: null,
    defaultShown: generated,
    expected: secretForm,
    description: 'signs list cursors',
    requiredInProduction: true,
    secret: true,
    parse: text,
  }),
  SIGNING_KEYS_FILE: declare('SIGNING_KEYS_FILE')({
    default: null,
    defaultShown: '`DATA_DIR/signing-keys.json`, created in development',
    expected: 'the path of a keyring made by `obs keys rotate`',
    description: 'the ES256 keys that sign access tokens; every instance reads the same file',
    requiredInProduction: true,
    parse: text,
  }),
  WEBHOOK_SECRET_KEY: declare('WEBHOOK_SECRET_KEY')({
    default: null,
    defaultShown: generated,
    expected: secretForm,
    description: "seals the webhook subscriptions' signing secrets in their events",
    requiredInProduction: true,
    secret: true,
    parse: text,
  }),
  IDEMPOTENCY_SECRET_KEY: declare('IDEMPOTENCY_SECRET_KEY')({
    default: null,
    defaultShown: generated,
    expected: secretForm,
    description: 'seals the kept `Idempotency-Key` answers (AES-256-GCM)',
    requiredInProduction: true,
    secret: true,
    parse: text,
  }),
} as const;

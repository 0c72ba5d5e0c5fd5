import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A development secret that survives restarts: generated once into DATA_DIR/secrets.json (mode 0600).
 * Production never gets here: loadConfig refuses to start without the secret set explicitly.
 */
/** The development secret `name` if DATA_DIR/secrets.json holds one; never generates it. */
export const existingDevelopmentSecret = (dataDir: string, name: string): string | undefined => {
  const file = join(dataDir, 'secrets.json');
  return existsSync(file)
    ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, string | undefined>)[name] || undefined
    : undefined;
};

export const developmentSecret = (
  dataDir: string,
  name: string,
  onCreate?: (secret: string) => void,
): string => {
  const file = join(dataDir, 'secrets.json');
  mkdirSync(dataDir, { recursive: true });
  const secrets = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>) : {};
  const existing = secrets[name];
  if (existing) return existing;
  const created = randomBytes(32).toString('base64url');
  writeFileSync(file, JSON.stringify({ ...secrets, [name]: created }, null, 2), { mode: 0o600 });
  onCreate?.(created);
  return created;
};

import { secretFields } from '../core/secret-fields.js';

/*
 * History never hands out credential hashes or sealed secrets (src/core/secret-fields.ts), and neither does
 * any operator output (the CLI's `audit replay` and every `--json` print): they all redact with this one
 * function. The NDJSON export shows committed fields as their commitments instead (./export.ts).
 */
export const redacted = '[redacted]';

/**
 * The value with every secret field, at any depth, replaced by `[redacted]`: event data holds them at the
 * top, folded states deeper (a webhooks state holds each subscription's `sealedSecret`). Parts without
 * secrets are returned as they are, not copied.
 */
export const withoutSecrets = (value: unknown): unknown => {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const items = value.map(withoutSecrets);
    return items.every((item, index) => item === value[index]) ? value : items;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  const cleaned = entries.map(([key, inner]): [string, unknown] => [
    key,
    secretFields.has(key) ? redacted : withoutSecrets(inner),
  ]);
  return cleaned.every(([, inner], index) => inner === entries[index]![1])
    ? value
    : Object.fromEntries(cleaned);
};

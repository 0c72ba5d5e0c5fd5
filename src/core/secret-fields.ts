/**
 * Fields that hold credential hashes or sealed secrets. History is for auditing who did what; it never
 * hands out material that could be attacked offline, even to an admin. The event store commits to these
 * fields by a salted digest (src/eventstore/hash-chain.ts), so that an export can leave them out and still
 * be verified; the history redacts them (src/history/redaction.ts). One list for both, so that they agree.
 */
export const secretFields: ReadonlySet<string> = new Set([
  'passwordHash',
  'secretHash',
  'refreshTokenHash',
  'sealedSecret',
]);

/** The secret fields at the top of an event's data, where events hold them; none for anything else. */
export const topLevelSecrets = (data: unknown): string[] => {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return [];
  const found: string[] = [];
  for (const field of secretFields) if (Object.hasOwn(data, field)) found.push(field);
  return found;
};

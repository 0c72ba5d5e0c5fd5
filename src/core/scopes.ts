/** The scopes a credential can carry. `admin` implies every other scope, within its own tenant only. */
export const scopes = [
  'observations:read',
  'observations:write',
  'cv:read',
  'cv:write',
  'locations:read',
  'locations:write',
  'webhooks:manage',
  'admin',
] as const;

export type Scope = (typeof scopes)[number];

export const isScope = (value: string): value is Scope => (scopes as readonly string[]).includes(value);

export const grants = (held: readonly Scope[], required: Scope): boolean =>
  held.includes(required) || held.includes('admin');

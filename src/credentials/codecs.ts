import * as t from 'io-ts';
import { scopes, type Scope } from '../core/scopes.js';
import {
  component,
  DateTimeString,
  described,
  listOf,
  oneOf,
  plainText,
  refined,
  secretText,
  strictObject,
  withSchema,
} from '../http/codec.js';
import { ServiceId, StreamVersion, TenantIdString, typesAgree } from '../http/resource-fields.js';
import type { SecretCredential } from './secret-credential.decider.js';
import type { User } from './user.decider.js';

export const Email = refined(
  t.string,
  (s) => s.length <= 254 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s),
  'an e-mail address',
  { maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$', examples: ['ops@acme.test'] },
);

const isScope = (u: unknown): u is Scope =>
  typeof u === 'string' && (scopes as readonly string[]).includes(u);
const scopeExpectation = `one of ${scopes.join(', ')}`;
const ScopeCodec = withSchema(
  new t.Type<Scope, Scope, unknown>(
    scopeExpectation,
    isScope,
    (u, context) => (isScope(u) ? t.success(u) : t.failure(u, context, `must be ${scopeExpectation}`)),
    t.identity,
  ),
  { type: 'string', enum: [...scopes] },
);

/** A non-empty list of known scopes, each named when it is unknown (`scopes.1: must be one of …`). */
export const Scopes = described(
  listOf(ScopeCodec, { min: 1, max: scopes.length, distinct: true }, 'a non-empty list of distinct scopes'),
  { description: 'A non-empty list of distinct scopes' },
);

export const CreateUserBody = strictObject('a user', {
  email: Email,
  password: secretText(12, 1024),
  scopes: Scopes,
});

export const CreateSecretCredentialBody = strictObject('a credential', {
  name: plainText(1, 200),
  scopes: Scopes,
});

/** A credential string the service made, shown once: its prefix, then what only the service can check. */
export const shownOnce = (prefix: string, description: string) =>
  described(
    refined(t.string, (s) => s.startsWith(prefix), `a string that starts with ${prefix}`),
    {
      pattern: `^${prefix}`,
      description,
    },
  );

const nullable = <A>(codec: t.Type<A, A, unknown>) => t.union([codec, t.null]);

export const UserCodec = component(
  'User',
  described(
    strictObject('a user', {
      id: described(
        refined(t.string, (s) => /^u_[0-9a-f]{26}$/.test(s), 'a user id', { pattern: '^u_[0-9a-f]{26}$' }),
        {
          description: 'Derived from the tenant and the e-mail',
        },
      ),
      tenantId: TenantIdString,
      email: Email,
      scopes: Scopes,
      status: oneOf(['active', 'disabled'] as const),
      createdAt: DateTimeString,
      disabledAt: nullable(DateTimeString),
      version: StreamVersion,
    }),
    { description: 'A user who logs in with an e-mail and a password; the password is never returned' },
  ),
);

typesAgree<User, t.TypeOf<typeof UserCodec>>(true);

/** An API key or an OAuth client, without its secret; `prefix` is that of its id. */
export const secretCredentialFields = (prefix: string) => ({
  id: ServiceId(prefix),
  tenantId: TenantIdString,
  name: CreateSecretCredentialBody.fields.name,
  scopes: Scopes,
  status: oneOf(['active', 'revoked'] as const),
  createdAt: DateTimeString,
  revokedAt: nullable(DateTimeString),
  version: StreamVersion,
});

typesAgree<SecretCredential, t.TypeOf<t.TypeC<ReturnType<typeof secretCredentialFields>>>>(true);

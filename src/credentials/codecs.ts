import * as t from 'io-ts';
import { scopes, type Scope } from '../core/scopes.js';
import {
  described,
  listOf,
  plainText,
  refined,
  secretText,
  strictObject,
  withSchema,
} from '../http/codec.js';

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

import { isLeft } from 'fp-ts/lib/Either.js';
import * as t from 'io-ts';
import { scopes, type Scope } from '../auth/scopes.js';
import { boundedString, refined, strictObject } from '../http/codec.js';

export const Email = refined(
  t.string,
  (s) => s.length <= 254 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s),
  'an e-mail address',
);

const ScopeCodec = refined(
  t.string,
  (s) => (scopes as readonly string[]).includes(s),
  `one of ${scopes.join(', ')}`,
);

const ScopeList = t.array(ScopeCodec);
const scopeListExpectation = 'a non-empty list of distinct scopes';

/**
 * A non-empty list of known scopes, each named when it is unknown (`scopes.1: must be one of …`).
 * Not `refined`: that would fold the element errors into one message about the whole list.
 */
export const Scopes = new t.Type<Scope[], Scope[], unknown>(
  scopeListExpectation,
  (u): u is Scope[] => ScopeList.is(u) && u.length > 0 && new Set(u).size === u.length,
  (u, context) => {
    if (!Array.isArray(u)) return t.failure(u, context, `must be ${scopeListExpectation}`);
    const result = ScopeList.validate(u, context);
    if (isLeft(result)) return result;
    const list = result.right;
    return list.length > 0 && new Set(list).size === list.length
      ? t.success(list as Scope[])
      : t.failure(u, context, `must be ${scopeListExpectation}`);
  },
  t.identity,
);

export const CreateUserBody = strictObject('a user', {
  email: Email,
  password: boundedString(12, 1024),
  scopes: Scopes,
});

export const CreateSecretCredentialBody = strictObject('a credential', {
  name: boundedString(1, 200),
  scopes: Scopes,
});

import * as t from 'io-ts';
import { scopes, type Scope } from '../auth/scopes.js';
import { boundedString, refined, strictObject } from '../http/codec.js';
import { pageParams } from '../http/paging.js';

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

/** A non-empty list of known scopes, each named when it is unknown. */
export const Scopes = refined(
  t.array(ScopeCodec),
  (list) => list.length > 0 && new Set(list).size === list.length,
  'a non-empty list of distinct scopes',
) as unknown as t.Type<Scope[], Scope[], unknown>;

export const CreateTenantBody = strictObject('a tenant', {
  name: boundedString(1, 200),
  notificationEmail: Email,
});

export const CreateUserBody = strictObject('a user', {
  email: Email,
  password: boundedString(12, 1024),
  scopes: Scopes,
});

export const CreateSecretCredentialBody = strictObject('a credential', {
  name: boundedString(1, 200),
  scopes: Scopes,
});

export const ListParams = strictObject('list parameters', {}, pageParams);

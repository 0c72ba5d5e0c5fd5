import { randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { Keyring } from './signing-keys.js';
import type { Scope } from '../core/scopes.js';
import { isScope } from '../core/scopes.js';

/** Access tokens: ES256 JWTs. Verification pins the algorithm, the issuer and the audience. */
export interface TokenSettings {
  issuer: string;
  audience: string;
  accessTokenTtlSeconds: number;
}

export interface AccessClaims {
  sub: string;
  tenantId: string;
  scope: string;
  jti: string;
  iat: number;
  exp: number;
  iss: string;
  aud: string;
  /** The login session (refresh-token family) of a user's token. */
  sid?: string;
}

export const signAccessToken = (
  keyring: Keyring,
  settings: TokenSettings,
  claims: { sub: string; tenantId: string; scopes: readonly Scope[]; sid?: string },
  now: Date,
): { token: string; jti: string } => {
  const jti = randomUUID();
  const token = jwt.sign(
    {
      tenantId: claims.tenantId,
      scope: claims.scopes.join(' '),
      iat: Math.floor(now.getTime() / 1000),
      ...(claims.sid ? { sid: claims.sid } : {}),
    },
    keyring.signing.privateKeyPem,
    {
      algorithm: 'ES256',
      keyid: keyring.signing.kid,
      issuer: settings.issuer,
      audience: settings.audience,
      subject: claims.sub,
      jwtid: jti,
      expiresIn: settings.accessTokenTtlSeconds,
    },
  );
  return { token, jti };
};

/** Returns the claims of a valid token, or null for anything else: no detail leaks to the caller. */
export const verifyAccessToken = (keyring: Keyring, settings: TokenSettings, token: string, now: Date) => {
  try {
    // Inside the try: jwt.decode throws, rather than answering null, on a JWT header over a non-JSON payload.
    const decoded = jwt.decode(token, { complete: true });
    const kid = decoded?.header.kid;
    const publicKey = kid ? keyring.verifying.get(kid) : undefined;
    if (!publicKey || decoded?.header.alg !== 'ES256') return null;
    const claims = jwt.verify(token, publicKey, {
      algorithms: ['ES256'],
      issuer: settings.issuer,
      audience: settings.audience,
      clockTimestamp: Math.floor(now.getTime() / 1000),
    }) as Partial<AccessClaims>;
    const scopes = typeof claims.scope === 'string' ? claims.scope.split(' ').filter(Boolean) : [];
    if (typeof claims.sub !== 'string' || typeof claims.tenantId !== 'string' || !scopes.every(isScope))
      return null;
    return { ...(claims as AccessClaims), scopes };
  } catch {
    return null;
  }
};

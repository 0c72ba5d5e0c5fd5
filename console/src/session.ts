// The credential lives in sessionStorage (this tab, until it closes), never in localStorage: signing out,
// or closing the tab, forgets it. What the credential may do is asked of the API itself (see probeScopes).
import { base } from './base.js';

export type Credential =
  | { kind: 'apiKey'; tenantId: string; key: string }
  | { kind: 'user'; tenantId: string; email: string; accessToken: string; refreshToken: string };

const storageKey = 'obs-console-credential';

const isCredential = (value: unknown): value is Credential => {
  const credential = value as Partial<Record<string, unknown>> | null;
  if (typeof credential?.tenantId !== 'string') return false;
  if (credential.kind === 'apiKey') return typeof credential.key === 'string';
  return (
    credential.kind === 'user' &&
    typeof credential.email === 'string' &&
    typeof credential.accessToken === 'string' &&
    typeof credential.refreshToken === 'string'
  );
};

/** The stored credential; an entry that is not one (edited, or from another version) is dropped. */
const read = (): Credential | null => {
  const text = sessionStorage.getItem(storageKey);
  if (!text) return null;
  try {
    const stored: unknown = JSON.parse(text);
    if (isCredential(stored)) return stored;
  } catch {
    // Not JSON: dropped below, as any entry that is not a credential.
  }
  sessionStorage.removeItem(storageKey);
  return null;
};

let current: Credential | null = read();
const listeners = new Set<() => void>();

const set = (credential: Credential | null) => {
  current = credential;
  if (credential) sessionStorage.setItem(storageKey, JSON.stringify(credential));
  else sessionStorage.removeItem(storageKey);
  for (const listener of listeners) listener();
};

/** An API key names its tenant: `obs_<tenantId>.<keyId>.<secret>`. */
export const tenantOfKey = (key: string): string | null =>
  /^obs_(t_[0-9a-z]+)\./.exec(key.trim())?.[1] ?? null;

/** A sign-in the service refused, or could not be asked about: `message` says why, in the user's words. */
export class SignInRefused extends Error {}

const problemDetail = async (response: Response): Promise<string> => {
  try {
    const body = (await response.json()) as { detail?: string; errors?: { path: string; message: string }[] };
    return body.errors?.map((error) => `${error.path} ${error.message}`).join('; ') ?? body.detail ?? '';
  } catch {
    return '';
  }
};

/** Why a sign-in was refused, from the answer's status: what the user can do next. */
const refusalOf = async (response: Response, credential: 'key' | 'login'): Promise<SignInRefused> => {
  const retryAfter = response.headers.get('retry-after');
  const again = retryAfter ? ` in ${retryAfter} seconds` : ' in a while';
  if (response.status === 401)
    return new SignInRefused(
      credential === 'key'
        ? 'The service does not know this API key, or it was revoked. Check that you pasted all of it.'
        : 'The e-mail or the password is wrong, or the account is disabled.',
    );
  if (response.status === 429) return new SignInRefused(`Too many attempts: try again${again}.`);
  if (response.status === 400) return new SignInRefused(await problemDetail(response));
  if (response.status >= 500)
    return new SignInRefused(`The service is unavailable (HTTP ${response.status}): try again${again}.`);
  return new SignInRefused(`The service refused the sign-in (HTTP ${response.status}).`);
};

/** A request that never got an answer (offline, the service down) is refused too, saying so. */
const asked = async (request: () => Promise<Response>): Promise<Response> => {
  try {
    return await request();
  } catch {
    throw new SignInRefused('The service cannot be reached: check the connection, then try again.');
  }
};

interface TokenPair {
  accessToken: string;
  refreshToken: string;
}

const postJson = async (path: string, body: unknown) => {
  return fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
};

/** The tenant an access token is for: its `tenantId` claim (read, not verified: the service verifies it). */
const tenantOfToken = (token: string): string => {
  const payload = token.split('.')[1] ?? '';
  const json = atob(payload.replace(/-/g, '+').replace(/_/g, '/'));
  return (JSON.parse(json) as { tenantId: string }).tenantId;
};

let refreshing: Promise<boolean> | null = null;

export const session = {
  credential: () => current,
  tenantId: () => current?.tenantId ?? '',
  subscribe: (listener: () => void) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
  /**
   * Checked before it is kept, with one authenticated read (the tenant): a wrong or revoked key stays on
   * the sign-in form. A key without the `admin` scope is refused that read (403), which proves it valid.
   */
  useKey: async (key: string) => {
    const tenantId = tenantOfKey(key);
    if (!tenantId) throw new SignInRefused('That is not an API key of a tenant (obs_t_….….…).');
    const response = await asked(() =>
      fetch(`${base}/v1/tenants/${tenantId}`, { headers: { 'X-API-Key': key.trim() } }),
    );
    if (!response.ok && response.status !== 403) throw await refusalOf(response, 'key');
    set({ kind: 'apiKey', tenantId, key: key.trim() });
  },
  /** The tenant is optional: without it the account is the one the password opens, named by the token. */
  login: async (email: string, password: string, tenantId = '') => {
    const response = await asked(() =>
      postJson('/v1/auth/token', { email, password, ...(tenantId ? { tenantId } : {}) }),
    );
    if (!response.ok) throw await refusalOf(response, 'login');
    const body = (await response.json()) as TokenPair;
    set({
      kind: 'user',
      tenantId: tenantOfToken(body.accessToken),
      email,
      accessToken: body.accessToken,
      refreshToken: body.refreshToken,
    });
  },
  /** One refresh at a time: refresh tokens are single use, and a second use revokes the session. */
  refresh: (): Promise<boolean> => {
    const credential = current;
    if (credential?.kind !== 'user') return Promise.resolve(false);
    refreshing ??= (async () => {
      try {
        const response = await postJson('/v1/auth/refresh', { refreshToken: credential.refreshToken });
        // Signed out (or in as someone else) while the refresh was on its way: its answer is not ours to keep.
        if (current !== credential) return false;
        if (!response.ok) {
          set(null);
          return false;
        }
        const pair = (await response.json()) as TokenPair;
        if (current !== credential) return false;
        set({ ...credential, ...pair });
        return true;
      } finally {
        refreshing = null;
      }
    })();
    return refreshing;
  },
  /**
   * Forgets the credential at once; a login's session is also ended on the server (`POST /v1/auth/logout`),
   * so that its tokens stop working wherever a copy of them is. That call's failure changes nothing here:
   * the console has signed out either way.
   */
  signOut: () => {
    const signedOut = current;
    set(null);
    if (signedOut?.kind === 'user')
      void postJson('/v1/auth/logout', { refreshToken: signedOut.refreshToken }).catch(() => undefined);
  },
};

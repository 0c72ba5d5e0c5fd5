import { ApiError, errorFromResponse } from './errors.js';
import type { ClientCredentialsTokenResponse, MediaBody, Scope, TokenPair, UserTokens } from './types.js';

/** The production address of the service: what the client talks to unless `baseUrl` says otherwise. */
export const defaultBaseUrl = 'https://api.observation-service.example';

/** The subset of `fetch` the client calls: inject one to add logging, proxies or test doubles. */
export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>;

export interface ClientOptions {
  /** The service's address, with any path prefix; `https://api.observation-service.example` by default. */
  baseUrl?: string | undefined;
  /** An API key (`obs_<tenant>.<id>.<secret>`) or the platform admin key, sent as `X-API-Key`. */
  apiKey?: string | undefined;
  /** A bearer token from a user login; with `refreshToken` the client renews it on a 401. */
  accessToken?: string | undefined;
  refreshToken?: string | undefined;
  /** OAuth 2.0 client credentials: the client fetches, caches and renews its own tokens. */
  clientId?: string | undefined;
  clientSecret?: string | undefined;
  /** Scopes to ask the token endpoint for (space-separated or a list); all of the client's by default. */
  scope?: string | readonly Scope[] | undefined;
  /** The client-credentials token endpoint; `<baseUrl>/v1/oauth/token` by default. */
  tokenUrl?: string | undefined;
  /** The fetch to use; Node's global fetch by default. */
  fetch?: FetchFunction | undefined;
  /** Called with every new token pair of a user login (login and each refresh), e.g. to persist it. */
  onTokens?: ((tokens: UserTokens) => void | Promise<void>) | undefined;
  /** Headers sent with every request. */
  headers?: Record<string, string> | undefined;
  /** The clock, in epoch milliseconds (for tests). */
  now?: (() => number) | undefined;
}

/** Options every method takes. */
export interface RequestOptions {
  signal?: AbortSignal | undefined;
  /** Extra headers for this request. */
  headers?: Record<string, string> | undefined;
  /** Sent as `X-Correlation-Id`: recorded in the metadata of the events the request writes. */
  correlationId?: string | undefined;
}

/** Options of every POST: an `Idempotency-Key` makes a retry of the same request safe (docs/api.md). */
export interface PostOptions extends RequestOptions {
  idempotencyKey?: string | undefined;
}

/** Options of conditional writes: `ifMatch` is a version (`3`) or an ETag (`"3"`); a stale one gets 412. */
export interface ConditionalOptions extends RequestOptions {
  ifMatch?: number | string | undefined;
}

export interface ConditionalPostOptions extends PostOptions {
  ifMatch?: number | string | undefined;
}

/** What an answer said beside its body: read it with `responseMeta(result)`. */
export interface ResponseMeta {
  status: number;
  headers: Headers;
  requestId: string | null;
  /** The `ETag`: the resource's version in quotes, or `"<sha256>"` for media. */
  etag: string | null;
  /** `X-Position` after a write: pass it as `minPosition` to a list to read your own write. */
  position: number | null;
  location: string | null;
  /** Whether the answer was replayed for a repeated `Idempotency-Key`. */
  replayed: boolean;
}

const metas = new WeakMap<object, ResponseMeta>();

/** The status and headers of the answer a result came from (any object a client method returned). */
export const responseMeta = (result: object): ResponseMeta | undefined => metas.get(result);

export type QueryValue = string | number | boolean | null | undefined | readonly (string | number)[];

export interface Call {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, QueryValue>;
  json?: unknown;
  body?: MediaBody;
  contentType?: string;
  accept?: string;
  /** `none`: send no credential (token endpoints, health, discovery). */
  auth?: 'credential' | 'none';
  options?: ConditionalPostOptions | undefined;
}

type Credential =
  { kind: 'apiKey'; value: string } | { kind: 'session'; token: string } | { kind: 'client'; token: string };

interface ClientToken {
  accessToken: string;
  scope: string;
  expiresAt: number;
  /** A little before expiry (60 s, or 10% of the lifetime when that is shorter): when to fetch the next. */
  renewAt: number;
}

interface Session {
  accessToken: string;
  refreshToken: string | undefined;
  expiresAt: number | undefined;
}

const toQuery = (query: Record<string, QueryValue> | undefined): string => {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    if (typeof value === 'object') for (const item of value) params.append(name, String(item));
    else params.append(name, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
};

const etagOf = (ifMatch: number | string): string => (typeof ifMatch === 'number' ? `"${ifMatch}"` : ifMatch);

/** RFC 6749 §2.3.1: each part form-urlencoded before it is joined and base64-encoded. */
const formEncode = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');

/**
 * The HTTP layer: URLs, headers, credentials, the one retry after a 401 that renewed them, and turning
 * error answers into ApiError. Resources build on `json`, `send` and `empty`.
 */
export class Transport {
  readonly baseUrl: string;
  private readonly tokenUrl: string;
  private readonly fetchFn: FetchFunction;
  private readonly now: () => number;
  private session: Session | undefined;
  private clientToken: ClientToken | undefined;
  private pendingClientToken: Promise<ClientToken> | undefined;
  private pendingRefresh: Promise<UserTokens> | undefined;

  constructor(private readonly options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? defaultBaseUrl).replace(/\/+$/, '');
    this.tokenUrl = options.tokenUrl ?? `${this.baseUrl}/v1/oauth/token`;
    this.fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
    this.now = options.now ?? Date.now;
    if (options.accessToken) {
      this.session = {
        accessToken: options.accessToken,
        refreshToken: options.refreshToken,
        expiresAt: undefined,
      };
    }
  }

  // ─── Requests ──────────────────────────────────────────────────────────────────────────────────────

  /** Sends the call and answers the response when it is ok (2xx, or 304); throws ApiError otherwise. */
  async send(call: Call): Promise<Response> {
    const credential = call.auth === 'none' ? undefined : await this.credential();
    let response = await this.fetchOnce(call, credential);
    if (response.status === 401 && credential && credential.kind !== 'apiKey') {
      // Renewed credentials are worth one more try: an expired or rotated token, not a wrong one.
      const renewed = await this.renew(credential, response);
      if (renewed) {
        await response.body?.cancel();
        response = await this.fetchOnce(call, renewed);
      }
    }
    if (!response.ok && response.status !== 304) throw errorFromResponse(response, await response.text());
    return response;
  }

  /** A JSON answer, with its status and headers kept for `responseMeta`. */
  async json<T>(call: Call): Promise<T> {
    const response = await this.send(call);
    const text = await response.text();
    const body = (text === '' ? {} : JSON.parse(text)) as T;
    if (typeof body === 'object' && body !== null) metas.set(body, this.meta(response));
    return body;
  }

  /** An answer without a body (204). */
  async empty(call: Call): Promise<void> {
    const response = await this.send(call);
    await response.body?.cancel();
  }

  meta(response: Response): ResponseMeta {
    const position = response.headers.get('x-position');
    return {
      status: response.status,
      headers: response.headers,
      requestId: response.headers.get('x-request-id'),
      etag: response.headers.get('etag'),
      position: position === null ? null : Number(position),
      location: response.headers.get('location'),
      replayed: response.headers.get('idempotency-replayed') === 'true',
    };
  }

  private async fetchOnce(call: Call, credential: Credential | undefined): Promise<Response> {
    const { options = {} } = call;
    const headers: Record<string, string> = { accept: call.accept ?? 'application/json' };
    let body: RequestInit['body'];
    if (call.json !== undefined) {
      headers['content-type'] = call.contentType ?? 'application/json';
      body = JSON.stringify(call.json);
    } else if (call.body !== undefined) {
      headers['content-type'] = call.contentType ?? 'application/octet-stream';
      body = call.body as RequestInit['body'];
    }
    if (credential?.kind === 'apiKey') headers['x-api-key'] = credential.value;
    else if (credential) headers.authorization = `Bearer ${credential.token}`;
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    if (options.ifMatch !== undefined) headers['if-match'] = etagOf(options.ifMatch);
    if (options.correlationId !== undefined) headers['x-correlation-id'] = options.correlationId;
    Object.assign(headers, this.options.headers, options.headers);
    return this.fetchFn(`${this.baseUrl}${call.path}${toQuery(call.query)}`, {
      method: call.method,
      headers,
      ...(body !== undefined ? { body } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  // ─── Credentials ───────────────────────────────────────────────────────────────────────────────────

  /** A user session first (login, accessToken), then the API key, then client credentials. */
  private async credential(): Promise<Credential | undefined> {
    if (this.pendingRefresh) await this.pendingRefresh.catch(() => undefined);
    if (this.session) return { kind: 'session', token: this.session.accessToken };
    if (this.options.apiKey) return { kind: 'apiKey', value: this.options.apiKey };
    if (this.options.clientId && this.options.clientSecret) {
      return { kind: 'client', token: (await this.clientCredentialsToken()).accessToken };
    }
    return undefined;
  }

  /** After a 401: the credential to try once more with, if there is a fresher one. */
  private async renew(failed: Credential, response: Response): Promise<Credential | undefined> {
    if (failed.kind === 'client') {
      if (this.clientToken?.accessToken === failed.token) this.clientToken = undefined;
      const token = await this.clientCredentialsToken();
      return token.accessToken === failed.token ? undefined : { kind: 'client', token: token.accessToken };
    }
    if (failed.kind !== 'session' || !this.session) return undefined;
    // Another call refreshed the session meanwhile: its token is the fresher one.
    if (this.session.accessToken !== failed.token)
      return { kind: 'session', token: this.session.accessToken };
    if (!this.session.refreshToken) return undefined;
    try {
      const tokens = await this.refresh();
      return { kind: 'session', token: tokens.accessToken };
    } catch (error) {
      // The refresh token is spent or revoked: the call's own 401 is the answer.
      if (error instanceof ApiError && error.status === 401) return undefined;
      await response.body?.cancel();
      throw error;
    }
  }

  /** The cached client-credentials token, fetched when absent or about to expire; one request at a time. */
  async clientCredentialsToken(): Promise<{ accessToken: string; scope: string; expiresAt: Date }> {
    const { clientId, clientSecret } = this.options;
    if (!clientId || !clientSecret) throw new Error('clientId and clientSecret are not configured');
    let token = this.clientToken;
    if (!token || this.now() >= token.renewAt) {
      this.pendingClientToken ??= this.requestClientToken(clientId, clientSecret).finally(() => {
        this.pendingClientToken = undefined;
      });
      token = await this.pendingClientToken;
    }
    return { accessToken: token.accessToken, scope: token.scope, expiresAt: new Date(token.expiresAt) };
  }

  private async requestClientToken(clientId: string, clientSecret: string): Promise<ClientToken> {
    const started = this.now();
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    const { scope } = this.options;
    if (scope !== undefined) form.set('scope', typeof scope === 'string' ? scope : scope.join(' '));
    const basic = Buffer.from(`${formEncode(clientId)}:${formEncode(clientSecret)}`).toString('base64');
    const response = await this.fetchFn(this.tokenUrl, {
      method: 'POST',
      headers: {
        accept: 'application/json',
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${basic}`,
      },
      body: form.toString(),
    });
    const text = await response.text();
    if (!response.ok) throw errorFromResponse(response, text);
    const body = JSON.parse(text) as ClientCredentialsTokenResponse;
    const lifetime = body.expires_in * 1000;
    const token: ClientToken = {
      accessToken: body.access_token,
      scope: body.scope,
      expiresAt: started + lifetime,
      renewAt: started + lifetime - Math.min(60_000, lifetime * 0.1),
    };
    this.clientToken = token;
    return token;
  }

  // ─── User sessions ─────────────────────────────────────────────────────────────────────────────────

  /** Logs a user in; from then on the client sends its access token and refreshes it on a 401. */
  async login(
    email: string,
    password: string,
    tenantId?: string,
    options?: RequestOptions,
  ): Promise<UserTokens> {
    const started = this.now();
    const pair = await this.json<TokenPair>({
      method: 'POST',
      path: '/v1/auth/token',
      json: { email, password, ...(tenantId === undefined ? {} : { tenantId }) },
      auth: 'none',
      ...(options ? { options } : {}),
    });
    return this.adopt(pair, started);
  }

  /** Trades the refresh token for a new pair (single use: the old one stops working). One at a time. */
  refresh(): Promise<UserTokens> {
    this.pendingRefresh ??= this.refreshOnce().finally(() => {
      this.pendingRefresh = undefined;
    });
    return this.pendingRefresh;
  }

  private async refreshOnce(): Promise<UserTokens> {
    const refreshToken = this.session?.refreshToken;
    if (!refreshToken) throw new Error('There is no refresh token: log in first');
    const started = this.now();
    try {
      const pair = await this.json<TokenPair>({
        method: 'POST',
        path: '/v1/auth/refresh',
        json: { refreshToken },
        auth: 'none',
      });
      return await this.adopt(pair, started);
    } catch (error) {
      // A refused refresh token never works again: drop the session rather than send it on.
      if (error instanceof ApiError && error.status === 401 && this.session?.refreshToken === refreshToken) {
        this.session = undefined;
      }
      throw error;
    }
  }

  private async adopt(pair: TokenPair, started: number): Promise<UserTokens> {
    const expiresAt = started + pair.expiresIn * 1000;
    this.session = { accessToken: pair.accessToken, refreshToken: pair.refreshToken, expiresAt };
    const tokens: UserTokens = { ...pair, expiresAt: new Date(expiresAt) };
    await this.options.onTokens?.(tokens);
    return tokens;
  }

  /** Uses these tokens from now on (e.g. a pair persisted by `onTokens`). */
  setTokens(tokens: {
    accessToken: string;
    refreshToken?: string | undefined;
    expiresAt?: Date | undefined;
  }): void {
    this.session = {
      accessToken: tokens.accessToken,
      refreshToken: tokens.refreshToken,
      expiresAt: tokens.expiresAt?.getTime(),
    };
  }

  /** Forgets the user session: the client falls back to its API key or client credentials, if any. */
  clearTokens(): void {
    this.session = undefined;
  }

  /** Ends the user session on the server (its tokens stop working), then forgets it here. */
  async logout(): Promise<void> {
    const refreshToken = this.session?.refreshToken;
    this.session = undefined;
    if (refreshToken)
      await this.empty({ method: 'POST', path: '/v1/auth/logout', json: { refreshToken }, auth: 'none' });
  }

  /** The current user session's tokens, if any. */
  get tokens():
    { accessToken: string; refreshToken: string | undefined; expiresAt: Date | undefined } | undefined {
    const session = this.session;
    return (
      session && {
        accessToken: session.accessToken,
        refreshToken: session.refreshToken,
        expiresAt: session.expiresAt === undefined ? undefined : new Date(session.expiresAt),
      }
    );
  }
}

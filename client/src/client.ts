import {
  ApiKeys,
  CvJobs,
  CvModels,
  Discovery,
  Events,
  HealthResource,
  Locations,
  OAuthClients,
  Observations,
  Tenants,
  Users,
  Visits,
  Webhooks,
} from './resources.js';
import { Transport, type ClientOptions, type RequestOptions } from './transport.js';
import type { UserTokens } from './types.js';

/** Logging in, refreshing, and the tokens the client holds. */
export class Auth {
  constructor(private readonly http: Transport) {}

  /**
   * `POST /v1/auth/token`: logs a user in. From then on the client sends the user's access token and, on a
   * 401, refreshes it once and retries the request. The login is for the account of the e-mail that the
   * password opens; `tenantId` limits it to that tenant's, and is needed only when the password opens
   * accounts in several tenants (e-mails are unique within a tenant only). `onTokens` sees the new pair.
   */
  login(email: string, password: string, tenantId?: string, options?: RequestOptions): Promise<UserTokens> {
    return this.http.login(email, password, tenantId, options);
  }

  /** `POST /v1/auth/refresh`: a new pair now (single use: the old refresh token stops working). */
  refresh(): Promise<UserTokens> {
    return this.http.refresh();
  }

  /** The cached OAuth client-credentials token, fetched or renewed when needed. */
  clientCredentialsToken(): Promise<{ accessToken: string; scope: string; expiresAt: Date }> {
    return this.http.clientCredentialsToken();
  }

  /** Uses a user's tokens from now on, e.g. a pair persisted from `onTokens`. */
  setTokens(tokens: {
    accessToken: string;
    refreshToken?: string | undefined;
    expiresAt?: Date | undefined;
  }): void {
    this.http.setTokens(tokens);
  }

  /** Forgets the user session here; its tokens still work until they expire (see `logout`). */
  clearTokens(): void {
    this.http.clearTokens();
  }

  /**
   * `POST /v1/auth/logout`: ends the user session on the server, so that its refresh token and its access
   * tokens stop working, and forgets it here. Without a refresh token, it only forgets.
   */
  logout(): Promise<void> {
    return this.http.logout();
  }

  /** The current user session, if any. */
  get tokens() {
    return this.http.tokens;
  }
}

/**
 * A client of the observation service. Give it one identity: `apiKey`, a user's `accessToken` (and
 * `refreshToken`) or `login(...)`, or `clientId` and `clientSecret` for OAuth client credentials. When
 * several are given, a user session wins over the API key, and the API key over client credentials.
 *
 * ```ts
 * const client = new ObservationServiceClient({ baseUrl: 'http://127.0.0.1:3000', apiKey });
 * const observation = await client.observations.create(tenantId, { observedAt: new Date().toISOString() });
 * for await (const o of client.observations.iterate(tenantId, { limit: 50 })) console.log(o.id);
 * ```
 */
export class ObservationServiceClient {
  readonly auth: Auth;
  readonly tenants: Tenants;
  readonly users: Users;
  readonly apiKeys: ApiKeys;
  readonly oauthClients: OAuthClients;
  readonly observations: Observations;
  readonly locations: Locations;
  readonly visits: Visits;
  readonly webhooks: Webhooks;
  readonly cvJobs: CvJobs;
  readonly cvModels: CvModels;
  readonly events: Events;
  readonly health: HealthResource;
  readonly discovery: Discovery;
  private readonly http: Transport;

  constructor(options: ClientOptions = {}) {
    this.http = new Transport(options);
    this.auth = new Auth(this.http);
    this.tenants = new Tenants(this.http);
    this.users = new Users(this.http);
    this.apiKeys = new ApiKeys(this.http);
    this.oauthClients = new OAuthClients(this.http);
    this.observations = new Observations(this.http);
    this.locations = new Locations(this.http);
    this.visits = new Visits(this.http);
    this.webhooks = new Webhooks(this.http);
    this.cvJobs = new CvJobs(this.http);
    this.cvModels = new CvModels(this.http);
    this.events = new Events(this.http);
    this.health = new HealthResource(this.http);
    this.discovery = new Discovery(this.http);
  }

  /** The address requests go to. */
  get baseUrl(): string {
    return this.http.baseUrl;
  }

  /** Shorthand for `auth.login`. */
  login(email: string, password: string, tenantId?: string, options?: RequestOptions): Promise<UserTokens> {
    return this.auth.login(email, password, tenantId, options);
  }

  /** Shorthand for `auth.refresh`. */
  refresh(): Promise<UserTokens> {
    return this.auth.refresh();
  }
}

/** `new ObservationServiceClient(options)`. */
export const createClient = (options: ClientOptions = {}): ObservationServiceClient =>
  new ObservationServiceClient(options);

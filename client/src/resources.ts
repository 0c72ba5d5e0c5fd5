import type {
  Call,
  ConditionalOptions,
  ConditionalPostOptions,
  PostOptions,
  QueryValue,
  RequestOptions,
  Transport,
} from './transport.js';
import type {
  ApiKey,
  AuthorizationServerMetadata,
  BoundingBox,
  CreateCredentialInput,
  CreateCvJobInput,
  CreatedApiKey,
  CreatedOAuthClient,
  CreatedTenant,
  CreateLocationInput,
  CreateObservationInput,
  CreateTenantInput,
  CreateUserInput,
  CreateVisitInput,
  CreateWebhookInput,
  CreatedWebhook,
  CvJob,
  CvModel,
  Delivery,
  DeliveryAttempt,
  EnabledWebhook,
  DeliveryDetails,
  PausedWebhook,
  ReplayFailedInput,
  ResumedWebhook,
  WebhookReplayResult,
  EnableWebhookInput,
  RotatedWebhook,
  RotateWebhookSecretInput,
  WebhookTestInput,
  WebhookTestResult,
  EventHistoryParams,
  AuditDigest,
  AuditVerification,
  ConsistencyProof,
  InclusionProof,
  Health,
  HistoryEvent,
  Jwks,
  ListCvJobsParams,
  ListDeliveriesParams,
  ListLocationsParams,
  ListObservationsParams,
  ListVisitsParams,
  Location,
  LocationPatch,
  MediaBody,
  MediaDownload,
  ThumbnailWidth,
  OAuthClient,
  Observation,
  ObservationMedia,
  ObservationPatch,
  ObservationVersion,
  Page,
  PageParams,
  Tenant,
  User,
  Visit,
  VisitPatch,
  WebhookSubscription,
} from './types.js';

const seg = encodeURIComponent;
const tenantPath = (tenantId: string) => `/v1/tenants/${seg(tenantId)}`;

/** Only the options that were given: the request then carries no empty headers. */
const withOptions = (options: Call['options'] | undefined): Pick<Call, 'options'> =>
  options ? { options } : {};

/**
 * Every item of a list, page after page, following `nextCursor` until it is null. Pages are fetched as
 * the loop asks for items; breaking out of the loop fetches no further page.
 */
export async function* paginate<T, P extends PageParams>(
  params: P,
  fetchPage: (params: P) => Promise<Page<T>>,
): AsyncGenerator<T, void, undefined> {
  let cursor = params.cursor;
  for (;;) {
    const page = await fetchPage({ ...params, ...(cursor !== undefined ? { cursor } : {}) });
    yield* page.data;
    if (page.nextCursor === null || page.nextCursor === undefined) return;
    cursor = page.nextCursor;
  }
}

const bboxParam = (bbox: BoundingBox | undefined): string | undefined =>
  bbox === undefined || typeof bbox === 'string'
    ? bbox
    : `${bbox.minLon},${bbox.minLat},${bbox.maxLon},${bbox.maxLat}`;

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    signal?.addEventListener('abort', abort, { once: true });
  });

/**
 * The lines of an NDJSON answer as they arrive, parsed. Stopping the loop early cancels the download (the
 * server then stops reading). A body that ends in the middle of a line is a cut-off download: an error.
 */
async function* ndjsonLines<T>(response: Response): AsyncGenerator<T, void, undefined> {
  if (!response.body) return;
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let rest = '';
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const lines = (rest + decoder.decode(value, { stream: true })).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) if (line.trim() !== '') yield JSON.parse(line) as T;
    }
    rest += decoder.decode();
    finished = true;
    if (rest.trim() !== '') {
      throw new Error('The NDJSON download ended in the middle of a line; resume it with `after`');
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
  }
}

abstract class Resource {
  constructor(protected readonly http: Transport) {}
}

/**
 * A tenant's collection under `/v1/tenants/{tenantId}/<segment>`: create, list, iterate and get work the
 * same for every resource. `query` turns typed list parameters into the query string.
 */
abstract class TenantCollection<Item, CreateInput, Created, Params extends PageParams> extends Resource {
  constructor(
    http: Transport,
    private readonly segment: string,
  ) {
    super(http);
  }
  protected path(tenantId: string, id?: string) {
    return `${tenantPath(tenantId)}/${this.segment}${id === undefined ? '' : `/${seg(id)}`}`;
  }
  protected query(params: Params): Record<string, QueryValue> {
    // Every parameter goes into the query string as it is; PageParams is their common shape.
    return { ...(params as PageParams) };
  }
  create(tenantId: string, input: CreateInput, options?: PostOptions): Promise<Created> {
    return this.http.json({
      method: 'POST',
      path: this.path(tenantId),
      json: input,
      ...withOptions(options),
    });
  }
  list(tenantId: string, params: Params = {} as Params, options?: RequestOptions): Promise<Page<Item>> {
    return this.http.json({
      method: 'GET',
      path: this.path(tenantId),
      query: this.query(params),
      ...withOptions(options),
    });
  }
  iterate(
    tenantId: string,
    params: Params = {} as Params,
    options?: RequestOptions,
  ): AsyncGenerator<Item, void, undefined> {
    return paginate(params, (page) => this.list(tenantId, page, options));
  }
  get(tenantId: string, id: string, options?: RequestOptions): Promise<Item> {
    return this.http.json({ method: 'GET', path: this.path(tenantId, id), ...withOptions(options) });
  }
  /** A JSON Merge Patch; with `ifMatch` the update is conditional (412 when stale). */
  protected patch<Patch>(
    tenantId: string,
    id: string,
    patch: Patch,
    options?: ConditionalOptions,
  ): Promise<Item> {
    return this.http.json({
      method: 'PATCH',
      path: this.path(tenantId, id),
      json: patch,
      contentType: 'application/merge-patch+json',
      ...withOptions(options),
    });
  }
  protected remove(tenantId: string, id: string, options?: RequestOptions): Promise<void> {
    return this.http.empty({ method: 'DELETE', path: this.path(tenantId, id), ...withOptions(options) });
  }
  /** `POST .../{id}/<action>`: a command on one item, with `input` as its JSON body when there is one. */
  protected act<Answer>(
    tenantId: string,
    id: string,
    action: string,
    options: ConditionalPostOptions | undefined,
    input?: object,
  ): Promise<Answer> {
    return this.http.json({
      method: 'POST',
      path: `${this.path(tenantId, id)}/${action}`,
      ...(input === undefined ? {} : { json: input }),
      ...withOptions(options),
    });
  }
}

/** `/v1/tenants`: created and listed with the platform admin key; read by the tenant's admins. */
export class Tenants extends Resource {
  create(input: CreateTenantInput, options?: PostOptions): Promise<CreatedTenant> {
    return this.http.json({ method: 'POST', path: '/v1/tenants', json: input, ...withOptions(options) });
  }
  list(params: PageParams = {}, options?: RequestOptions): Promise<Page<Tenant>> {
    return this.http.json({
      method: 'GET',
      path: '/v1/tenants',
      query: { ...params },
      ...withOptions(options),
    });
  }
  iterate(params: PageParams = {}, options?: RequestOptions): AsyncGenerator<Tenant, void, undefined> {
    return paginate(params, (page) => this.list(page, options));
  }
  get(tenantId: string, options?: RequestOptions): Promise<Tenant> {
    return this.http.json({ method: 'GET', path: tenantPath(tenantId), ...withOptions(options) });
  }
}

/** `.../users` (scope `admin`). */
export class Users extends TenantCollection<User, CreateUserInput, User, PageParams> {
  constructor(http: Transport) {
    super(http, 'users');
  }
  /** Disables the user: its tokens and sessions stop working. */
  disable(tenantId: string, userId: string, options?: PostOptions): Promise<User> {
    return this.act(tenantId, userId, 'disable', options);
  }
}

/** API keys and OAuth clients: the secret is in the create answer only; DELETE revokes. */
class SecretCredentials<Record, Created> extends TenantCollection<
  Record,
  CreateCredentialInput,
  Created,
  PageParams
> {
  /** Revokes the credential for good (204). */
  revoke(tenantId: string, id: string, options?: RequestOptions): Promise<void> {
    return this.remove(tenantId, id, options);
  }
}

/** `.../api-keys` (scope `admin`). */
export class ApiKeys extends SecretCredentials<ApiKey, CreatedApiKey> {
  constructor(http: Transport) {
    super(http, 'api-keys');
  }
}

/** `.../oauth-clients` (scope `admin`). */
export class OAuthClients extends SecretCredentials<OAuthClient, CreatedOAuthClient> {
  constructor(http: Transport) {
    super(http, 'oauth-clients');
  }
}

/** `.../observations`, their media and their history. `get` is always current: folded from the events. */
export class Observations extends TenantCollection<
  Observation,
  CreateObservationInput,
  Observation,
  ListObservationsParams
> {
  constructor(http: Transport) {
    super(http, 'observations');
  }
  protected override query(params: ListObservationsParams) {
    return { ...params, bbox: bboxParam(params.bbox) } as Record<string, QueryValue>;
  }
  /** A JSON Merge Patch; with `ifMatch` the update is conditional (412 when stale). */
  update(
    tenantId: string,
    id: string,
    patch: ObservationPatch,
    options?: ConditionalOptions,
  ): Promise<Observation> {
    return this.patch(tenantId, id, patch, options);
  }
  /** Every version of the observation, oldest first, with the event that made it. */
  history(tenantId: string, id: string, options?: RequestOptions): Promise<ObservationVersion[]> {
    return this.http.json({
      method: 'GET',
      path: `${this.path(tenantId, id)}/history`,
      ...withOptions(options),
    });
  }
  /**
   * Attaches an image (JPEG, PNG or WebP, sniffed from the bytes): 201 with the new item, or 200 with the
   * existing one for the same bytes (`responseMeta(result).status`).
   */
  uploadMedia(
    tenantId: string,
    id: string,
    image: MediaBody,
    options?: PostOptions & { contentType?: string | undefined },
  ): Promise<ObservationMedia> {
    const { contentType, ...rest } = options ?? {};
    return this.http.json({
      method: 'POST',
      path: `${this.path(tenantId, id)}/media`,
      body: image,
      contentType: contentType ?? 'application/octet-stream',
      ...withOptions(rest),
    });
  }
  /** The bytes of an attached image, with their type and `ETag`. */
  downloadMedia(
    tenantId: string,
    id: string,
    mediaId: string,
    options?: RequestOptions,
  ): Promise<MediaDownload> {
    return this.bytes(`${this.path(tenantId, id)}/media/${seg(mediaId)}`, {}, options);
  }
  /** A WebP of an attached image `width` pixels wide (160 unless said), never enlarged. */
  downloadThumbnail(
    tenantId: string,
    id: string,
    mediaId: string,
    width?: ThumbnailWidth,
    options?: RequestOptions,
  ): Promise<MediaDownload> {
    const path = `${this.path(tenantId, id)}/media/${seg(mediaId)}/thumbnail`;
    return this.bytes(path, width === undefined ? {} : { width }, options);
  }
  private async bytes(
    path: string,
    query: Record<string, string>,
    options: RequestOptions | undefined,
  ): Promise<MediaDownload> {
    const response = await this.http.send({
      method: 'GET',
      path,
      query,
      accept: '*/*',
      ...withOptions(options),
    });
    return {
      data: new Uint8Array(await response.arrayBuffer()),
      contentType: response.headers.get('content-type') ?? 'application/octet-stream',
      etag: response.headers.get('etag'),
    };
  }
}

/** `.../locations` (scopes `locations:read`, `locations:write`). */
export class Locations extends TenantCollection<
  Location,
  CreateLocationInput,
  Location,
  ListLocationsParams
> {
  constructor(http: Transport) {
    super(http, 'locations');
  }
  protected override query(params: ListLocationsParams) {
    return { ...params, bbox: bboxParam(params.bbox) } as Record<string, QueryValue>;
  }
  update(
    tenantId: string,
    id: string,
    patch: LocationPatch,
    options?: ConditionalOptions,
  ): Promise<Location> {
    return this.patch(tenantId, id, patch, options);
  }
  delete(tenantId: string, id: string, options?: ConditionalOptions): Promise<void> {
    return this.remove(tenantId, id, options);
  }
}

/** `.../visits` (scopes `observations:read`, `observations:write`). */
export class Visits extends TenantCollection<Visit, CreateVisitInput, Visit, ListVisitsParams> {
  constructor(http: Transport) {
    super(http, 'visits');
  }
  /** Changes a draft visit (merge patch); a submitted one answers 409. */
  update(tenantId: string, id: string, patch: VisitPatch, options?: ConditionalOptions): Promise<Visit> {
    return this.patch(tenantId, id, patch, options);
  }
  /** Submits the visit with every observation that names it. */
  submit(tenantId: string, id: string, options?: ConditionalPostOptions): Promise<Visit> {
    return this.act(tenantId, id, 'submit', options);
  }
}

/** `.../webhooks` and their delivery log (scope `webhooks:manage`). */
export class Webhooks extends TenantCollection<
  WebhookSubscription,
  CreateWebhookInput,
  CreatedWebhook,
  PageParams
> {
  constructor(http: Transport) {
    super(http, 'webhooks');
  }
  delete(tenantId: string, id: string, options?: RequestOptions): Promise<void> {
    return this.remove(tenantId, id, options);
  }
  /** Makes a disabled subscription active again; `replayMissed` delivers what it missed meanwhile. */
  enable(
    tenantId: string,
    id: string,
    input: EnableWebhookInput = {},
    options?: PostOptions,
  ): Promise<EnabledWebhook> {
    return this.act(tenantId, id, 'enable', options, input);
  }
  /**
   * A new secret, generated unless given, shown in this answer only; the previous one signs too for 24 h
   * (`previousSecretExpiresAt`).
   */
  rotateSecret(
    tenantId: string,
    id: string,
    input: RotateWebhookSecretInput = {},
    options?: PostOptions,
  ): Promise<RotatedWebhook> {
    return this.act(tenantId, id, 'secret/rotate', options, input);
  }
  /** Sends a signed example event of a type to the receiver now, and answers with the attempt's outcome. */
  test(
    tenantId: string,
    id: string,
    input: WebhookTestInput = {},
    options?: PostOptions,
  ): Promise<WebhookTestResult> {
    return this.act(tenantId, id, 'test', options, input);
  }
  /** The subscription's delivery attempts, newest first. */
  deliveries(
    tenantId: string,
    id: string,
    params: ListDeliveriesParams = {},
    options?: RequestOptions,
  ): Promise<Page<DeliveryAttempt>> {
    const path = `${this.path(tenantId, id)}/deliveries`;
    return this.http.json({ method: 'GET', path, query: { ...params }, ...withOptions(options) });
  }
  iterateDeliveries(
    tenantId: string,
    id: string,
    params: ListDeliveriesParams = {},
    options?: RequestOptions,
  ): AsyncGenerator<DeliveryAttempt, void, undefined> {
    return paginate(params, (page) => this.deliveries(tenantId, id, page, options));
  }
  /** Stops every delivery until `resume`; what happens meanwhile waits, and is not lost. */
  pause(tenantId: string, id: string, options?: PostOptions): Promise<PausedWebhook> {
    return this.act(tenantId, id, 'pause', options);
  }
  /** Active again: what the pause held back goes out in order; `replayed` says how many deliveries. */
  resume(tenantId: string, id: string, options?: PostOptions): Promise<ResumedWebhook> {
    return this.act(tenantId, id, 'resume', options);
  }
  /** A delivery with its payload and each attempt's request as sent (headers, signatures; never the secret). */
  delivery(
    tenantId: string,
    id: string,
    deliveryId: string,
    options?: RequestOptions,
  ): Promise<DeliveryDetails> {
    const path = `${this.path(tenantId, id)}/deliveries/${seg(deliveryId)}`;
    return this.http.json({ method: 'GET', path, ...withOptions(options) });
  }
  /** Sends again, as redeliveries, the deliveries that ended failed since `since` (at most 500 a call). */
  replayFailed(
    tenantId: string,
    id: string,
    input: ReplayFailedInput,
    options?: PostOptions,
  ): Promise<WebhookReplayResult> {
    return this.act(tenantId, id, 'replay', options, input);
  }
  /** Sends a delivery once more, with the same envelope id (202). */
  redeliver(tenantId: string, id: string, deliveryId: string, options?: PostOptions): Promise<Delivery> {
    const path = `${this.path(tenantId, id)}/deliveries/${seg(deliveryId)}/redeliver`;
    return this.http.json({ method: 'POST', path, ...withOptions(options) });
  }
}

/**
 * `.../cv-jobs` (scopes `cv:read`, `cv:write`). `create` requests a model run over one of the observation's
 * images (202, status `queued`); `list` is newest first; `get` is always current, folded from the events.
 */
export class CvJobs extends TenantCollection<CvJob, CreateCvJobInput, CvJob, ListCvJobsParams> {
  constructor(http: Transport) {
    super(http, 'cv-jobs');
  }
  /** Polls the job until it is `completed` or `failed`; rejects after `timeoutMs` (60 s). */
  async wait(
    tenantId: string,
    id: string,
    {
      timeoutMs = 60_000,
      intervalMs = 250,
      ...options
    }: RequestOptions & { timeoutMs?: number | undefined; intervalMs?: number | undefined } = {},
  ): Promise<CvJob> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const job = await this.get(tenantId, id, options);
      if (job.status === 'completed' || job.status === 'failed') return job;
      if (Date.now() + intervalMs > deadline) {
        throw new Error(`CV job ${id} is still ${job.status} after ${timeoutMs} ms`);
      }
      await sleep(intervalMs, options.signal);
    }
  }
}

/** `.../cv-models` (scope `cv:read`). */
export class CvModels extends Resource {
  /** Every model a job may name; one page, `nextCursor` null. */
  list(tenantId: string, options?: RequestOptions): Promise<Page<CvModel>> {
    return this.http.json({
      method: 'GET',
      path: `${tenantPath(tenantId)}/cv-models`,
      ...withOptions(options),
    });
  }
}

/** `.../events`: the tenant's event history (scope `admin`). */
export class Events extends Resource {
  private query(params: EventHistoryParams) {
    const { type, ...rest } = params;
    return { ...rest, type: typeof type === 'string' ? [type] : type };
  }
  /** One JSON page; a page may hold fewer events than `limit`, even none, while `nextCursor` is set. */
  list(
    tenantId: string,
    params: EventHistoryParams = {},
    options?: RequestOptions,
  ): Promise<Page<HistoryEvent>> {
    return this.http.json({
      method: 'GET',
      path: `${tenantPath(tenantId)}/events`,
      query: this.query(params),
      ...withOptions(options),
    });
  }
  /** Every matching event, following `nextCursor` page by page. */
  iterate(
    tenantId: string,
    params: EventHistoryParams = {},
    options?: RequestOptions,
  ): AsyncGenerator<HistoryEvent, void, undefined> {
    return paginate(params, (page) => this.list(tenantId, page, options));
  }
  /**
   * Every matching event up to the newest at the time of the request, as one NDJSON download read as it
   * arrives (`limit` caps the lines). To pick up later events, or to resume a download that was cut off,
   * call again with `after` set to the last `position` seen.
   */
  async *stream(
    tenantId: string,
    params: Omit<EventHistoryParams, 'cursor'> = {},
    options?: RequestOptions,
  ): AsyncGenerator<HistoryEvent, void, undefined> {
    const response = await this.http.send({
      method: 'GET',
      path: `${tenantPath(tenantId)}/events`,
      query: this.query(params),
      accept: 'application/x-ndjson',
      ...withOptions(options),
    });
    yield* ndjsonLines<HistoryEvent>(response);
  }
  /**
   * The tenant's tamper check (`GET .../audit/verification`), as `obs audit verify` does it: `ok` false and
   * `broken` naming the first broken link when the history was altered. An ApiError with status 503 while
   * another verification runs or when the history is too long to verify within the service's time budget.
   */
  verify(tenantId: string, options?: RequestOptions): Promise<AuditVerification> {
    return this.http.json({
      method: 'GET',
      path: `${tenantPath(tenantId)}/audit/verification`,
      ...withOptions(options),
    });
  }
  /** The tenant's digests, newest first (`GET .../audit/digests`); keep the ones you fetch. */
  digests(
    tenantId: string,
    params: { limit?: number; cursor?: string } = {},
    options?: RequestOptions,
  ): Promise<Page<AuditDigest>> {
    return this.http.json({
      method: 'GET',
      path: `${tenantPath(tenantId)}/audit/digests`,
      query: { ...params },
      ...withOptions(options),
    });
  }
  /** The newest digest; an ApiError with status 404 before the first. */
  latestDigest(tenantId: string, options?: RequestOptions): Promise<AuditDigest> {
    return this.http.json({
      method: 'GET',
      path: `${tenantPath(tenantId)}/audit/digests/latest`,
      ...withOptions(options),
    });
  }
  /** RFC 9162 inclusion proof of an event in the tree of `size` (the newest signed digest's when absent). */
  inclusionProof(
    tenantId: string,
    params: { eventId: string; size?: number },
    options?: RequestOptions,
  ): Promise<InclusionProof> {
    return this.http.json({
      method: 'GET',
      path: `${tenantPath(tenantId)}/audit/proofs/inclusion`,
      query: { ...params },
      ...withOptions(options),
    });
  }
  /** RFC 9162 consistency proof that the tree of `to` events extends the tree of `from`. */
  consistencyProof(
    tenantId: string,
    params: { from: number; to: number },
    options?: RequestOptions,
  ): Promise<ConsistencyProof> {
    return this.http.json({
      method: 'GET',
      path: `${tenantPath(tenantId)}/audit/proofs/consistency`,
      query: { ...params },
      ...withOptions(options),
    });
  }
}

/** `GET /health`. */
export class HealthResource extends Resource {
  /**
   * Readiness: `{status: "ready"}` when the service should get traffic; an ApiError with status 503
   * otherwise (draining, a store down or full, a consumer not running). Sent without a credential, so it
   * says only that; the checks and consumers are for the platform key (docs/operations.md#health-and-logs).
   */
  check(options?: RequestOptions): Promise<Health> {
    return this.http.json({ method: 'GET', path: '/health', auth: 'none', ...withOptions(options) });
  }

  /** `GET /health/ready`: the same as `check`. */
  ready(options?: RequestOptions): Promise<Health> {
    return this.http.json({ method: 'GET', path: '/health/ready', auth: 'none', ...withOptions(options) });
  }

  /** `GET /health/live`: `{status: "alive"}` while the process runs, also while it drains. */
  live(options?: RequestOptions): Promise<{ status: 'alive' }> {
    return this.http.json({ method: 'GET', path: '/health/live', auth: 'none', ...withOptions(options) });
  }
}

/** The public documents: OpenAPI, OAuth metadata (RFC 8414), the token-signing keys. */
export class Discovery extends Resource {
  openApi(options?: RequestOptions): Promise<Record<string, unknown>> {
    return this.http.json({ method: 'GET', path: '/v1/openapi.json', auth: 'none', ...withOptions(options) });
  }
  authorizationServer(options?: RequestOptions): Promise<AuthorizationServerMetadata> {
    return this.http.json({
      method: 'GET',
      path: '/.well-known/oauth-authorization-server',
      auth: 'none',
      ...withOptions(options),
    });
  }
  jwks(options?: RequestOptions): Promise<Jwks> {
    return this.http.json({
      method: 'GET',
      path: '/.well-known/jwks.json',
      auth: 'none',
      ...withOptions(options),
    });
  }
  /** Every key that signed digests, retired ones included (with `retiredAt`): for verifyDigestSignature. */
  digestKeys(options?: RequestOptions): Promise<Jwks> {
    return this.http.json({
      method: 'GET',
      path: '/.well-known/digest-keys.json',
      auth: 'none',
      ...withOptions(options),
    });
  }
}

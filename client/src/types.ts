/**
 * Request and response shapes of the observation service's HTTP API (docs/api.md, docs/webhooks.md).
 * They mirror the server's own types by hand: the client never imports server code.
 */

// ─── Common ──────────────────────────────────────────────────────────────────────────────────────────

/** The scopes a credential can carry. `admin` implies every other scope, within its own tenant. */
export type Scope =
  | 'observations:read'
  | 'observations:write'
  | 'cv:read'
  | 'cv:write'
  | 'locations:read'
  | 'locations:write'
  | 'webhooks:manage'
  | 'admin';

export const scopes: readonly Scope[] = [
  'observations:read',
  'observations:write',
  'cv:read',
  'cv:write',
  'locations:read',
  'locations:write',
  'webhooks:manage',
  'admin',
];

/** One page of a list: `nextCursor` is null on the last page. */
export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

/** The paging parameters every list takes: `limit` 1–200 (default 50), `cursor` from `nextCursor`. */
export interface PageParams {
  limit?: number;
  cursor?: string;
}

/** One failing field of a validation error: `path` is dotted (`position.lat`), empty for the whole body. */
export interface FieldError {
  path: string;
  message: string;
}

/** An RFC 9457 problem document, as every error of the API is answered. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  errors?: FieldError[];
  requestId?: string;
  /** On 403: the scope the route needs. */
  requiredScope?: string;
  [extension: string]: unknown;
}

/** One readiness check. */
export interface HealthCheck {
  status: 'pass' | 'fail';
  error?: string;
}

/** A consumer of the service (a projection, the webhook projector, the CV worker) as readiness shows it. */
export interface ConsumerHealth {
  name: string;
  state: 'running' | 'retrying' | 'standby' | 'stopped';
  lastError: string | null;
  lastErrorAt: string | null;
  restarts: number;
  checkpoint?: number;
  lag?: number;
  parked?: number;
}

/** `GET /health` (readiness): the service should get traffic. */
export interface Health {
  status: 'ready';
  checks: Record<
    'draining' | 'eventStore' | 'readModels' | 'blobs' | 'idempotency' | 'storage' | 'consumers',
    HealthCheck
  >;
  consumers: ConsumerHealth[];
}

// ─── Authentication ──────────────────────────────────────────────────────────────────────────────────

/** `POST /v1/auth/token` and `POST /v1/auth/refresh`. */
export interface TokenPair {
  accessToken: string;
  /** Opaque (`ort_…`), single use: every refresh answers a new one. */
  refreshToken: string;
  tokenType: 'Bearer';
  /** Seconds the access token lives. */
  expiresIn: number;
}

/** A token pair as the client keeps it, with the time its access token expires by the client's clock. */
export interface UserTokens extends TokenPair {
  expiresAt: Date;
}

/** `POST /v1/oauth/token` (RFC 6749 §4.4). */
export interface ClientCredentialsTokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  /** The granted scopes, space-separated. */
  scope: string;
}

/** RFC 6749 §5.2: the error body of the token endpoint (with the problem members beside it). */
export interface OAuthErrorBody {
  /** `invalid_request`, `invalid_client`, `invalid_scope`, `unsupported_grant_type`, … */
  error: string;
  error_description?: string;
  type?: string;
  title?: string;
  status?: number;
  requestId?: string;
}

/** `GET /.well-known/oauth-authorization-server` (RFC 8414). */
export interface AuthorizationServerMetadata {
  issuer: string;
  token_endpoint: string;
  jwks_uri: string;
  grant_types_supported: string[];
  token_endpoint_auth_methods_supported: string[];
  response_types_supported: string[];
  scopes_supported: Scope[];
  [member: string]: unknown;
}

/** `GET /.well-known/jwks.json`: the public ES256 keys that sign access tokens. */
export interface Jwks {
  keys: { kty: string; kid: string; alg?: string; use?: string; crv?: string; x?: string; y?: string }[];
}

// ─── Tenants and credentials ─────────────────────────────────────────────────────────────────────────

export interface Tenant {
  id: string;
  name: string;
  notificationEmail: string;
  createdAt: string;
  version: number;
}

export interface CreateTenantInput {
  name: string;
  notificationEmail: string;
}

/** The answer to creating a tenant: its first admin API key is shown here, once. */
export interface CreatedTenant extends Tenant {
  adminApiKey: string;
}

export interface User {
  id: string;
  tenantId: string;
  email: string;
  scopes: Scope[];
  status: 'active' | 'disabled';
  createdAt: string;
  disabledAt: string | null;
  version: number;
}

export interface CreateUserInput {
  email: string;
  /** At least 12 characters. */
  password: string;
  scopes: Scope[];
}

/** An API key's or an OAuth client's record: never its secret. */
export interface SecretCredential {
  id: string;
  tenantId: string;
  name: string;
  scopes: Scope[];
  status: 'active' | 'revoked';
  createdAt: string;
  revokedAt: string | null;
  version: number;
}

export type ApiKey = SecretCredential;
export type OAuthClient = SecretCredential;

export interface CreateCredentialInput {
  name: string;
  scopes: Scope[];
}

/** The answer to creating an API key: `key` (`obs_<tenant>.<id>.<secret>`) is shown once. */
export interface CreatedApiKey extends ApiKey {
  key: string;
}

/** The answer to registering an OAuth client: `clientId` and `clientSecret` are shown once. */
export interface CreatedOAuthClient extends OAuthClient {
  clientId: string;
  clientSecret: string;
}

// ─── Observations and media ──────────────────────────────────────────────────────────────────────────

export interface GeoPosition {
  lat: number;
  lon: number;
  /** 0..1,000,000 metres. */
  accuracyM?: number;
}

export type Attributes = Record<string, unknown>;

export type MediaContentType = 'image/jpeg' | 'image/png' | 'image/webp';

/** An image attached to an observation, stored once by its SHA-256. */
export interface ObservationMedia {
  /** `m_` and the first 26 hex digits of the SHA-256. */
  id: string;
  sha256: string;
  contentType: MediaContentType;
  size: number;
  width: number;
  height: number;
  addedAt: string;
}

export interface Observation {
  id: string;
  tenantId: string;
  /** ISO 8601, UTC. */
  observedAt: string;
  position: GeoPosition | null;
  locationId: string | null;
  visitId: string | null;
  notes: string | null;
  attributes: Attributes;
  media: ObservationMedia[];
  createdAt: string;
  updatedAt: string;
  version: number;
}

export interface CreateObservationInput {
  /** ISO 8601 with a time zone (`Z` or `±hh:mm`). */
  observedAt: string;
  position?: GeoPosition | null;
  locationId?: string | null;
  visitId?: string | null;
  /** At most 10,000 characters. */
  notes?: string | null;
  /** At most 16 KiB once serialized. */
  attributes?: Attributes;
}

/** A JSON Merge Patch (RFC 7396): present fields replace, `null` clears, attributes merge key by key. */
export interface ObservationPatch {
  observedAt?: string;
  position?: GeoPosition | null;
  locationId?: string | null;
  visitId?: string | null;
  notes?: string | null;
  attributes?: Record<string, unknown>;
}

export type ObservationSort =
  'observedAt' | '-observedAt' | 'updatedAt' | '-updatedAt' | 'createdAt' | '-createdAt';

/** A bounding box: `minLon,minLat,maxLon,maxLat` as a string, or as its four numbers. */
export type BoundingBox = string | { minLon: number; minLat: number; maxLon: number; maxLat: number };

export interface ListObservationsParams extends PageParams {
  sort?: ObservationSort;
  observedFrom?: string;
  observedTo?: string;
  updatedSince?: string;
  locationId?: string;
  visitId?: string;
  bbox?: BoundingBox;
  /** Wait until the list includes the write that answered with this `X-Position`. */
  minPosition?: number;
}

/** A downloaded image. */
export interface MediaDownload {
  data: Uint8Array;
  contentType: string;
  /** `"<sha256>"`. */
  etag: string | null;
}

/** The bytes of an image to upload, as read from a file or a camera; JPEG, PNG or WebP. */
export type MediaBody = Uint8Array | ArrayBuffer | Blob;

// ─── Locations and visits ────────────────────────────────────────────────────────────────────────────

/** A GeoJSON Polygon (RFC 7946 §3.1.6): an outer ring and optional holes of `[lon, lat]` positions. */
export interface Polygon {
  type: 'Polygon';
  coordinates: [number, number][][];
}

export interface Location {
  id: string;
  tenantId: string;
  name: string;
  position: { lat: number; lon: number };
  boundary: Polygon | null;
  attributes: Attributes;
  createdAt: string;
  updatedAt: string;
  version: number;
}

export interface CreateLocationInput {
  name: string;
  position: { lat: number; lon: number };
  boundary?: Polygon | null;
  attributes?: Attributes;
}

export interface LocationPatch {
  name?: string;
  position?: { lat: number; lon: number };
  boundary?: Polygon | null;
  attributes?: Record<string, unknown>;
}

export type LocationSort = 'name' | '-name' | 'createdAt' | '-createdAt' | 'updatedAt' | '-updatedAt';

export interface ListLocationsParams extends PageParams {
  sort?: LocationSort;
  namePrefix?: string;
  bbox?: BoundingBox;
  minPosition?: number;
}

export interface Visit {
  id: string;
  tenantId: string;
  locationId: string;
  startedAt: string;
  endedAt: string | null;
  participants: string[];
  notes: string | null;
  status: 'draft' | 'submitted';
  /** The observations that belong to the visit, recorded when it is submitted. */
  observationIds: string[];
  submittedAt: string | null;
  createdAt: string;
  updatedAt: string;
  version: number;
}

export interface CreateVisitInput {
  locationId: string;
  startedAt: string;
  endedAt?: string | null;
  participants?: string[];
  notes?: string | null;
}

export interface VisitPatch {
  locationId?: string;
  startedAt?: string;
  endedAt?: string | null;
  participants?: string[];
  notes?: string | null;
}

export type VisitSort = 'startedAt' | '-startedAt' | 'createdAt' | '-createdAt';

export interface ListVisitsParams extends PageParams {
  sort?: VisitSort;
  locationId?: string;
  status?: 'draft' | 'submitted';
  startedFrom?: string;
  startedTo?: string;
  minPosition?: number;
}

// ─── Webhooks ────────────────────────────────────────────────────────────────────────────────────────

export type WebhookEventType =
  'observation.created' | 'observation.updated' | 'cv.job.completed' | 'cv.job.failed' | 'visit.submitted';

export interface WebhookSubscription {
  id: string;
  tenantId: string;
  url: string;
  events: WebhookEventType[];
  status: 'active' | 'disabled';
  disabledReason: string | null;
  disabledAt: string | null;
  createdAt: string;
}

export interface CreateWebhookInput {
  /** An absolute `https` URL. */
  url: string;
  events: WebhookEventType[];
  /** 16 to 256 characters; never returned. */
  secret: string;
}

export interface EnableWebhookInput {
  /** Deliver the events the subscription missed while it was disabled. */
  replayMissed?: boolean;
}

/** The answer to enabling a subscription: `replayed` counts the deliveries scheduled for what it missed. */
export interface EnabledWebhook extends WebhookSubscription {
  replayed: number;
}

/** One attempt of one delivery, from `GET .../webhooks/{id}/deliveries` (newest first). */
export interface DeliveryAttempt {
  /** `<deliveryId>.<attempt>`. */
  id: string;
  deliveryId: string;
  webhookId: string;
  /** The envelope id, the same on every attempt. */
  eventId: string;
  eventType: WebhookEventType;
  attempt: number;
  attemptedAt: string;
  status: 'succeeded' | 'failed';
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  nextAttemptAt: string | null;
}

export interface ListDeliveriesParams extends PageParams {
  status?: 'succeeded' | 'failed';
  eventType?: WebhookEventType;
}

/** A delivery's state, as `POST .../redeliver` answers it. */
export interface Delivery {
  id: string;
  tenantId: string;
  deliveryId: string;
  webhookId: string;
  eventId: string;
  eventType: WebhookEventType;
  status: 'scheduled' | 'claimed' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  dueAt: string | null;
  claimedAt: string | null;
  manual: boolean;
  updatedAt: string;
}

/** What a receiver gets: the body of every delivery. */
export interface WebhookEnvelope<
  Data = Record<string, unknown>,
  Type extends WebhookEventType = WebhookEventType,
> {
  /** The same on every attempt and redelivery: deduplicate on it. */
  id: string;
  type: Type;
  tenantId: string;
  /** When the fact happened, ISO 8601 UTC. */
  timestamp: string;
  data: Data;
}

/** The `data` of each event type (docs/webhooks.md#what-a-receiver-gets). */
export interface WebhookEventData {
  'observation.created': {
    observationId: string;
    observedAt: string;
    position: GeoPosition | null;
    locationId: string | null;
    visitId: string | null;
    notes: string | null;
    attributes: Attributes;
    version: number;
  };
  'observation.updated': {
    observationId: string;
    /** The new value of every field that changed (`attributes` whole, after the merge). */
    changes: Partial<Omit<Observation, 'id' | 'tenantId' | 'media' | 'createdAt' | 'updatedAt' | 'version'>>;
    /** Present when the update is an image attached. */
    mediaAdded?: ObservationMedia;
    version: number;
  };
  'cv.job.completed': {
    jobId: string;
    observationId: string;
    model: string;
    status: 'completed';
    result: ModelResult;
  };
  'cv.job.failed': {
    jobId: string;
    observationId: string;
    model: string;
    status: 'failed';
    error: { code: CvFailureCode; message: string };
  };
  'visit.submitted': Omit<Visit, 'id' | 'tenantId' | 'createdAt' | 'updatedAt' | 'version'> & {
    visitId: string;
    status: 'submitted';
    submittedAt: string;
  };
}

/** Any delivery, discriminated by `type`: `switch (event.type)` narrows `event.data`. */
export type WebhookEvent = {
  [Type in WebhookEventType]: WebhookEnvelope<WebhookEventData[Type], Type>;
}[WebhookEventType];

// ─── CV jobs and models ──────────────────────────────────────────────────────────────────────────────

export type CvJobStatus = 'queued' | 'running' | 'completed' | 'failed';

export type CvFailureCode =
  | 'model_error'
  | 'model_unreachable'
  | 'model_reply_invalid'
  | 'model_unknown'
  | 'timeout'
  | 'media_missing'
  | 'media_unreadable'
  | 'worker_lost';

/** A box normalized to 0..1 of the image's width and height, from the top-left corner. */
export interface DetectionBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Detection {
  label: string;
  /** 0..1 */
  confidence: number;
  bbox: DetectionBox;
  /** Fields of the model's own. */
  [extra: string]: unknown;
}

export interface ModelResult {
  detections: Detection[];
  summary: Record<string, unknown>;
}

export interface CvJob {
  id: string;
  tenantId: string;
  observationId: string;
  mediaId: string;
  sha256: string;
  model: string;
  status: CvJobStatus;
  attempts: number;
  result: ModelResult | null;
  error: { code: CvFailureCode; message: string } | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  updatedAt: string;
  version: number;
}

export interface CreateCvJobInput {
  observationId: string;
  /** One of the names `cvModels.list` answers. */
  model: string;
  /** One of the observation's media; the latest one when absent. */
  mediaId?: string;
}

export interface ListCvJobsParams extends PageParams {
  observationId?: string;
  status?: CvJobStatus;
  model?: string;
  minPosition?: number;
}

export interface CvModel {
  name: string;
  kind: 'builtin' | 'remote';
  description: string;
  returns: { detections: string; summary: Record<string, string> };
}

// ─── Event history ───────────────────────────────────────────────────────────────────────────────────

export interface EventMetadata {
  tenantId: string;
  /** The credential that caused the event, e.g. `apikey:k_…` or `system:cv-worker`. */
  actor: string;
  correlationId: string;
  causationId: string | null;
  occurredAt: string;
  schemaVersion: number;
  [member: string]: unknown;
}

/** An event as the history API shows it (credential hashes redacted). */
export interface HistoryEvent<Data = Record<string, unknown>> {
  id: string;
  type: string;
  streamName: string;
  streamVersion: number;
  /** The global commit order. */
  position: number;
  data: Data;
  metadata: EventMetadata;
}

export interface EventHistoryParams {
  /** Event types: sent as repeated `type` parameters. */
  type?: string | string[];
  /** One stream, by its exact name (`observation-<tenantId>_<id>`). */
  stream?: string;
  /** Inclusive bounds on `metadata.occurredAt`. */
  from?: string;
  to?: string;
  /** Events per page, 1–1000 (default 100); for `stream`, the most lines to send. */
  limit?: number;
  cursor?: string;
  /** Start after this position (exclusive); not together with `cursor`. */
  after?: number;
}

/** One entry of `GET .../observations/{id}/history`: the observation right after each of its events. */
export interface ObservationVersion {
  version: number;
  event: {
    id: string;
    type: string;
    data: Record<string, unknown>;
    metadata: EventMetadata;
    position: number;
  };
  observation: Observation | null;
}

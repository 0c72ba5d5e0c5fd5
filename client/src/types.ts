/**
 * Request and response shapes of the observation service's HTTP API (docs/api.md, docs/webhooks.md), named.
 * Each is an alias of a type generated from the OpenAPI document into openapi.gen.ts (`npm run
 * client:types`), so the client follows the server without importing its code. The few written here by
 * hand are the client's own: shapes the document has no schema for, or conveniences it adds on the wire's.
 */
import { scopes as scopeList } from './lists.gen.js';
import type { components, operations } from './openapi.gen.js';

type Schemas = components['schemas'];

/**
 * T, whose optional members also take `undefined`, which the client treats as absent (a query parameter
 * is left out, JSON drops the member). Callers compiled with `exactOptionalPropertyTypes` can then pass
 * `{ limit: maybeLimit }` or `{ notes: form.notes }` without spreading conditionally.
 */
type AcceptUndefined<T> = { [K in keyof T]: object extends Pick<T, K> ? T[K] | undefined : T[K] };
/** The query parameters an operation takes. */
type Query<Operation extends keyof operations> = AcceptUndefined<
  NonNullable<operations[Operation]['parameters']['query']>
>;
/** A request body the client sends. */
type Input<Name extends keyof Schemas> = AcceptUndefined<Schemas[Name]>;

// ─── Common ──────────────────────────────────────────────────────────────────────────────────────────

/** The scopes a credential can carry. `admin` implies every other scope, within its own tenant. */
export type Scope = Schemas['User']['scopes'][number];

/** Every scope, in the document's order (generated from it: client/src/lists.gen.ts). */
export const scopes: readonly Scope[] = scopeList satisfies readonly Scope[];

/**
 * One page of a list: `nextCursor` is null on the last page. Hand-written: the document describes each
 * list's page inline, and the client needs one generic shape for all of them.
 */
export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

/** The paging parameters every list takes: `limit` 1–200 (default 50), `cursor` from `nextCursor`. */
export type PageParams = Query<'listTenants'>;

/** One failing field of a validation error: `path` is dotted (`position.lat`), empty for the whole body. */
export type FieldError = Schemas['FieldError'];

/**
 * An RFC 9457 problem document, as every error of the API is answered. Problem documents may carry
 * members of their own (readiness adds `checks` on 503), hence the index signature the schema lacks.
 */
export type Problem = Schemas['Problem'] & { [extension: string]: unknown };

/**
 * `GET /health` (readiness): the service should get traffic. `checks` and `consumers` are there only for
 * the platform key.
 */
export type Health = operations['health']['responses'][200]['content']['application/json'];

/** One readiness check. */
export type HealthCheck = NonNullable<Health['checks']>['draining'];

/** A consumer of the service (a projection, the webhook projector, the CV worker) as readiness shows it. */
export type ConsumerHealth = NonNullable<Health['consumers']>[number];

// ─── Authentication ──────────────────────────────────────────────────────────────────────────────────

/** `POST /v1/auth/token` and `POST /v1/auth/refresh`. */
export type TokenPair = Schemas['LoginTokens'];

/** A token pair as the client keeps it, with the time its access token expires by the client's clock. */
export interface UserTokens extends TokenPair {
  expiresAt: Date;
}

/** `POST /v1/oauth/token` (RFC 6749 §4.4). */
export type ClientCredentialsTokenResponse = Schemas['OAuthToken'];

/**
 * RFC 6749 §5.2: the error body of a token endpoint. Only `error` is sure: `tokenUrl` may name another
 * authorization server, which sends none of the problem members this service adds beside it.
 */
export type OAuthErrorBody = { error: string } & Partial<Omit<Schemas['OAuthError'], 'error'>>;

/** `GET /.well-known/oauth-authorization-server` (RFC 8414). */
export type AuthorizationServerMetadata = Schemas['AuthorizationServerMetadata'];

/** `GET /.well-known/jwks.json`: the public ES256 keys that sign access tokens. */
export type Jwks = Schemas['JsonWebKeySet'];

// ─── Tenants and credentials ─────────────────────────────────────────────────────────────────────────

export type Tenant = Schemas['Tenant'];
export type CreateTenantInput = Input<'CreateTenantRequest'>;
/** The answer to creating a tenant: its first admin API key is shown here, once. */
export type CreatedTenant = Schemas['CreatedTenant'];

export type User = Schemas['User'];
export type CreateUserInput = Input<'CreateUserRequest'>;

export type ApiKey = Schemas['ApiKey'];
export type OAuthClient = Schemas['OAuthClient'];
/** An API key's or an OAuth client's record: never its secret. */
export type SecretCredential = ApiKey | OAuthClient;
export type CreateCredentialInput = Input<'CreateCredentialRequest'>;
/** The answer to creating an API key: `key` (`obs_<tenant>.<id>.<secret>`) is shown once. */
export type CreatedApiKey = Schemas['CreatedApiKey'];
/** The answer to registering an OAuth client: `clientId` and `clientSecret` are shown once. */
export type CreatedOAuthClient = Schemas['CreatedOAuthClient'];

// ─── Observations and media ──────────────────────────────────────────────────────────────────────────

export type GeoPosition = Schemas['GeoPosition'];
export type Attributes = Schemas['Observation']['attributes'];
/** An image attached to an observation, stored once by its SHA-256. */
export type ObservationMedia = Schemas['Media'];
export type MediaContentType = ObservationMedia['contentType'];

export type Observation = Schemas['Observation'];
export type CreateObservationInput = Input<'CreateObservationRequest'>;
/** A JSON Merge Patch (RFC 7396): present fields replace, `null` clears, attributes merge key by key. */
export type ObservationPatch = Input<'ObservationPatch'>;
export type ObservationSort = NonNullable<Query<'listObservations'>['sort']>;

/**
 * A bounding box: `minLon,minLat,maxLon,maxLat` as the wire's string, or, a client convenience, as its
 * four numbers.
 */
export type BoundingBox = string | { minLon: number; minLat: number; maxLon: number; maxLat: number };

export type ListObservationsParams = Omit<Query<'listObservations'>, 'bbox'> & {
  bbox?: BoundingBox | undefined;
};

/** A downloaded image: the client's view of a binary answer, which the document does not type. */
export interface MediaDownload {
  data: Uint8Array;
  contentType: string;
  /** `"<sha256>"`. */
  etag: string | null;
}

/** The widths a thumbnail comes in. */
export type ThumbnailWidth = NonNullable<Query<'downloadThumbnail'>['width']>;

/** The bytes of an image to upload, as read from a file or a camera; JPEG, PNG or WebP. */
export type MediaBody = Uint8Array | ArrayBuffer | Blob;

// ─── Locations and visits ────────────────────────────────────────────────────────────────────────────

/** A GeoJSON Polygon (RFC 7946 §3.1.6): an outer ring and optional holes of `[lon, lat]` positions. */
export type Polygon = Schemas['Polygon'];

export type Location = Schemas['Location'];
export type CreateLocationInput = Input<'CreateLocationRequest'>;
export type LocationPatch = Input<'LocationPatch'>;
export type LocationSort = NonNullable<Query<'listLocations'>['sort']>;
export type ListLocationsParams = Omit<Query<'listLocations'>, 'bbox'> & { bbox?: BoundingBox | undefined };

export type Visit = Schemas['Visit'];
export type CreateVisitInput = Input<'CreateVisitRequest'>;
export type VisitPatch = Input<'VisitPatch'>;
export type VisitSort = NonNullable<Query<'listVisits'>['sort']>;
export type ListVisitsParams = Query<'listVisits'>;

// ─── Webhooks ────────────────────────────────────────────────────────────────────────────────────────

export type WebhookSubscription = Schemas['WebhookSubscription'];
export type CreateWebhookInput = Input<'CreateWebhookRequest'>;
export type EnableWebhookInput = Input<'EnableWebhookRequest'>;
/** The answer to enabling a subscription: `replayed` counts the deliveries scheduled for what it missed. */
export type EnabledWebhook = Schemas['EnabledWebhookSubscription'];
/** The answer to creating a subscription: the only one with its secret (`whsec_…`). */
export type CreatedWebhook = Schemas['CreatedWebhookSubscription'];
export type RotatedWebhook = Schemas['RotatedWebhookSubscription'];
export type RotateWebhookSecretInput = Input<'RotateWebhookSecretRequest'>;
export type WebhookTestInput = Input<'WebhookTestRequest'>;
export type WebhookTestResult = Schemas['WebhookTestResult'];
/** One attempt of one delivery, from `GET .../webhooks/{id}/deliveries` (newest first). */
export type DeliveryAttempt = Schemas['DeliveryAttempt'];
export type ListDeliveriesParams = Query<'listDeliveryAttempts'>;
/** A delivery's state, as `POST .../redeliver` answers it. */
export type Delivery = Schemas['Delivery'];
/** A delivery with its payload and every attempt's request as sent (`GET …/deliveries/{deliveryId}`). */
export type DeliveryDetails = Schemas['DeliveryDetails'];
export type WebhookHealth = WebhookSubscription['health'];
export type PausedWebhook = Schemas['PausedWebhookSubscription'];
export type ResumedWebhook = Schemas['ResumedWebhookSubscription'];
export type ReplayFailedInput = Input<'ReplayFailedDeliveriesRequest'>;
export type WebhookReplayResult = Schemas['WebhookReplayResult'];

/** Any delivery, discriminated by `type`: `switch (event.type)` narrows `event.data`. */
export type WebhookEvent =
  | Schemas['ObservationCreatedEvent']
  | Schemas['ObservationUpdatedEvent']
  | Schemas['CvJobCompletedEvent']
  | Schemas['CvJobFailedEvent']
  | Schemas['VisitSubmittedEvent'];

export type WebhookEventType = WebhookEvent['type'];

/** The `data` of each event type (docs/webhooks.md#what-a-receiver-gets). */
export type WebhookEventData = { [Type in WebhookEventType]: Extract<WebhookEvent, { type: Type }>['data'] };

/** What a receiver gets: the body of every delivery, with `data` of the receiver's choosing. */
export type WebhookEnvelope<
  Data = Record<string, unknown>,
  Type extends WebhookEventType = WebhookEventType,
> = Omit<WebhookEvent, 'type' | 'data'> & { type: Type; data: Data };

// ─── CV jobs and models ──────────────────────────────────────────────────────────────────────────────

export type CvJob = Schemas['CvJob'];
export type CvJobStatus = CvJob['status'];
export type CvFailureCode = NonNullable<CvJob['error']>['code'];
export type ModelResult = Schemas['ModelResult'];
export type Detection = Schemas['Detection'];
/** A box normalized to 0..1 of the image's width and height, from the top-left corner. */
export type DetectionBox = Detection['bbox'];
export type CreateCvJobInput = Input<'CreateCvJobRequest'>;
export type ListCvJobsParams = Query<'listCvJobs'>;
export type CvModel = Schemas['CvModel'];

// ─── Event history ───────────────────────────────────────────────────────────────────────────────────

export type EventMetadata = Schemas['EventMetadata'];

/** An event as the history API shows it (credential hashes redacted), with `data` of the caller's choosing. */
export type HistoryEvent<Data = Record<string, unknown>> = Omit<Schemas['HistoryEvent'], 'data'> & {
  data: Data;
};

/** The wire's parameters, except that `type` may also be one event type (sent as repeated `type`). */
export type EventHistoryParams = Omit<Query<'listEvents'>, 'type'> & { type?: string | string[] | undefined };

/** `GET .../audit/verification`: the tenant's tamper check, `broken` naming the first broken link if any. */
export type AuditVerification = Schemas['AuditVerification'];

/** `GET .../audit/digests`: a digest, signed (docs/auditors.md#6-digests-and-proofs); verifyDigestSignature checks it. */
export type AuditDigest = Schemas['AuditDigest'];
/** `GET .../audit/proofs/inclusion`: check it with verifyInclusion against a digest's `logRoot`. */
export type InclusionProof = Schemas['InclusionProof'];
/** `GET .../audit/proofs/consistency`: check it with verifyConsistency against two digests' roots. */
export type ConsistencyProof = Schemas['ConsistencyProof'];

/** One entry of `GET .../observations/{id}/history`: the observation right after each of its events. */
export type ObservationVersion = Schemas['ObservationVersion'];

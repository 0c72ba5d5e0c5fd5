export { Auth, createClient, ObservationServiceClient } from './client.js';
export { ApiError, OAuthError, parseRetryAfter } from './errors.js';
export {
  ApiKeys,
  CvJobs,
  CvModels,
  Discovery,
  Events,
  HealthResource,
  Locations,
  OAuthClients,
  Observations,
  paginate,
  Tenants,
  Users,
  Visits,
  Webhooks,
} from './resources.js';
export {
  defaultBaseUrl,
  responseMeta,
  type ClientOptions,
  type ConditionalOptions,
  type ConditionalPostOptions,
  type FetchFunction,
  type PostOptions,
  type RequestOptions,
  type ResponseMeta,
} from './transport.js';
export {
  checkStandardWebhook,
  verifyStandardWebhook,
  verifyWebhookSignature,
  type RawBody,
  type StandardWebhookCheck,
  type StandardWebhookOptions,
  type WebhookHeaders,
} from './webhooks.js';
export {
  digestPayload,
  leafHashOf,
  logRoot,
  verifyConsistency,
  verifyDigestSignature,
  verifyInclusion,
  type DigestSignatureCheck,
  type SignedDigest,
} from './audit-proofs.js';
export {
  canonicalJson,
  exportedEventHash,
  HistoryFormatError,
  verifyHistory,
  type BrokenHistoryLink,
  type ExportedEvent,
  type HistoryReport,
  type VerifyHistoryOptions,
} from './verify-history.js';
export * from './types.js';
export { webhookEventTypes, visitStatuses, cvJobStatuses, deliveryStatuses } from './lists.gen.js';

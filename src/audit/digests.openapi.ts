import { page } from '../openapi/components.js';
import { operation, type BuiltOperation, type OperationSpec } from '../openapi/operation.js';
import { arrayOf, dateTime, integer, nullable, object, ref, string, type Schema } from '../openapi/schema.js';
import { pagingQuery } from '../openapi/resource.js';
import { ConsistencyQuery, InclusionQuery } from './digests.api.js';

/** Signed digests and RFC 9162 proofs (./digests.api.ts; docs/auditors.md#6-digests-and-proofs). */

const sha256Hex = (description: string) =>
  string({
    pattern: '^[0-9a-f]{64}$',
    description,
    examples: ['6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d'],
  });
const treeSize = (description: string) => integer(0, undefined, { format: 'int64', description });
const path = arrayOf(sha256Hex('A node of the tree'), {
  description: 'Hex SHA-256 nodes, in the RFC’s order',
});
const tag = 'Event history';
/** An event id as the examples write it (events are named by UUIDs). */
export const exampleEventId = '5f0c1a2b-3d4e-4f60-8a7b-9c0d1e2f3a4b';

export const digestSchemas: Record<string, Schema> = {
  AuditDigest: object(
    {
      tenantId: string(),
      position: integer(0, undefined, {
        format: 'int64',
        description: 'Every event up to this position is committed to',
      }),
      size: nullable(
        treeSize('Leaves of the log tree: the tenant’s events up to `position`; null before version 2'),
      ),
      logRoot: nullable(sha256Hex('RFC 9162 root of the log tree; null before version 2')),
      headsRoot: sha256Hex('Merkle root over the stream heads, as `obs audit verify` checks'),
      streams: integer(0),
      recordedAt: dateTime(),
      signature: nullable(
        string({
          description:
            'Compact JWS (ES256) over the canonical JSON of the other fields; null before version 2',
        }),
      ),
    },
    {},
    { description: 'A digest of the tenant’s history, signed with a key of `/.well-known/digest-keys.json`' },
  ),
  InclusionProof: object(
    {
      eventId: string(),
      leafIndex: integer(0, undefined, { format: 'int64' }),
      treeSize: treeSize('The tree the path leads to the root of'),
      hash: sha256Hex('The event’s hash: the leaf’s input'),
      path,
    },
    {},
    { description: 'RFC 9162 §2.1.3.1 inclusion proof of an event in the tenant’s log tree' },
  ),
  ConsistencyProof: object(
    { from: treeSize('The older tree'), to: treeSize('The newer tree'), path },
    {},
    { description: 'RFC 9162 §2.1.4.1 consistency proof: the newer tree extends the older' },
  ),
};

const sizeParameter = integer(1, Number.MAX_SAFE_INTEGER, { format: 'int64' });

/** A proof: read by admins, 404 before the first signed digest, 422 for sizes beyond it, 503 when busy. */
const proofOperation = (
  kind: 'inclusion' | 'consistency',
  schema: string,
  spec: Pick<OperationSpec, 'operationId' | 'summary' | 'description' | 'query'>,
) =>
  operation({
    method: 'get',
    path: `/v1/tenants/:tenantId/audit/proofs/${kind}`,
    ...spec,
    tag,
    access: { scope: 'admin' },
    responses: { '200': { description: 'The proof', content: { 'application/json': ref(schema) } } },
    problems: ['404', '422', '503'],
  });

export const digestOperations = (): BuiltOperation[] => [
  operation({
    method: 'get',
    path: '/v1/tenants/:tenantId/audit/digests',
    operationId: 'listAuditDigests',
    summary: "The tenant's digests, newest first",
    tag,
    access: { scope: 'admin' },
    query: pagingQuery,
    responses: {
      '200': {
        description: 'A page',
        content: { 'application/json': page(ref('AuditDigest'), 'A page of digests') },
      },
    },
  }),
  operation({
    method: 'get',
    path: '/v1/tenants/:tenantId/audit/digests/latest',
    operationId: 'latestAuditDigest',
    summary: "The tenant's newest digest",
    tag,
    access: { scope: 'admin' },
    responses: { '200': { description: 'The digest', content: { 'application/json': ref('AuditDigest') } } },
    problems: ['404'],
  }),
  proofOperation('inclusion', 'InclusionProof', {
    operationId: 'auditInclusionProof',
    summary: 'Prove an event is a leaf of a signed digest’s tree',
    description:
      'Reads the tenant’s events up to the newest signed digest (seconds per million events). 404 for an ' +
      'event not in that tree; 422 for a size beyond it, or one that ends before the event. A process ' +
      'computes one proof per tenant and two in all; another answers 503 with Retry-After.',
    query: {
      codec: InclusionQuery,
      parameters: {
        eventId: {
          description: 'The event (its `id` in the export); required',
          example: exampleEventId,
        },
        size: {
          schema: sizeParameter,
          description: 'A tree size, at most that of the newest signed digest (its size when absent)',
        },
      },
    },
  }),
  proofOperation('consistency', 'ConsistencyProof', {
    operationId: 'auditConsistencyProof',
    summary: 'Prove a newer tree extends an older one',
    description:
      'Reads the tenant’s first `to` events. 404 before the first signed digest; 422 when `to` is beyond ' +
      'it or `from` above `to`; 503 as for inclusion proofs.',
    query: {
      codec: ConsistencyQuery,
      parameters: {
        from: { schema: sizeParameter, description: 'The older tree’s size; required', example: 1 },
        to: {
          schema: sizeParameter,
          description: 'The newer tree’s size, at most that of the newest signed digest; required',
          example: 2,
        },
      },
    },
  }),
  operation({
    method: 'get',
    path: '/.well-known/digest-keys.json',
    operationId: 'digestKeys',
    summary: 'The keys that verify audit digests',
    description:
      'Every key of the keyring, retired ones included (with `retiredAt`): a retired key no longer verifies ' +
      'tokens, so it leaves `/.well-known/jwks.json`, but the digests it signed stay verifiable here.',
    tag,
    access: { public: true },
    responses: { '200': { description: 'The JWKS', content: { 'application/json': ref('JsonWebKeySet') } } },
  }),
];

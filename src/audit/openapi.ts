import { operation, type BuiltOperation } from '../openapi/operation.js';
import { boolean, dateTime, integer, nullable, object, ref, string, type Schema } from '../openapi/schema.js';

/** The tenant's tamper check (./verification.api.ts). */
export const auditSchemas: Record<string, Schema> = {
  BrokenLink: object(
    {
      streamName: string(),
      version: integer(0),
      position: integer(0, undefined, { format: 'int64' }),
      reason: string({ examples: ['the event does not match its hash'] }),
    },
    {},
    { description: 'The first event, in commit order, that breaks its chain or a digest' },
  ),
  AuditVerification: object(
    {
      tenantId: string(),
      ok: boolean({ description: 'Every chain and digest holds' }),
      events: integer(0, undefined, { description: 'Events checked (below the break, when broken)' }),
      streams: integer(0),
      digests: integer(0, undefined, { description: 'Recorded digests of the stream heads' }),
      broken: nullable(ref('BrokenLink')),
      verifiedAt: dateTime(),
    },
    {},
    { description: 'The outcome of `obs audit verify`, for the tenant' },
  ),
};

export const auditOperations = (): BuiltOperation[] => [
  operation({
    method: 'get',
    path: '/v1/tenants/:tenantId/audit/verification',
    operationId: 'verifyAudit',
    summary: "Verify the tenant's history",
    description:
      'Reads the whole history, as `obs audit verify` does: every stream has no gaps and each event matches ' +
      'its hash and the one before it, and every digest matches the stream heads it names. Reports the ' +
      'first broken link in commit order. Bounded in time: a history too long to verify here answers 503 ' +
      'and the CLI does it instead. A process runs one verification per tenant and two in all; another ' +
      'answers 503 with Retry-After.',
    tag: 'Event history',
    access: { scope: 'admin' },
    responses: {
      '200': {
        description: 'The result, broken or not',
        content: { 'application/json': ref('AuditVerification') },
      },
    },
    problems: ['503'],
  }),
];

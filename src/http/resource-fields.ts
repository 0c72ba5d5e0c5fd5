import * as t from 'io-ts';
import { tenantIdPattern } from '../core/ids.js';
import { refined } from './codec.js';

/**
 * Codecs of the fields the service itself writes into every resource (ids, versions, hashes). Resources
 * are sent, not decoded: these codecs describe what a client reads, so that a resource's TypeScript type
 * (`t.TypeOf`) and its schema in the API's document come from one declaration.
 */

const matching = (pattern: RegExp, expectation: string, schema: Record<string, unknown> = {}) =>
  refined(t.string, (s) => pattern.test(s), expectation, { pattern: pattern.source, ...schema });

/** An id the service made (src/core/ids.ts): a type prefix, `_`, 26 characters of Crockford base32. */
export const ServiceId = (prefix: string) =>
  matching(new RegExp(`^${prefix}_[0-9a-z]{26}$`), `an id of the form ${prefix}_ and 26 characters`);

export const TenantIdString = matching(tenantIdPattern, 'a tenant id', {
  maxLength: 42,
  examples: ['t_01m7xr44nde6cpe35md841agpz'],
});

/** A whole number from `min` up. */
export const WholeNumber = (min: number, schema: Record<string, unknown> = {}) =>
  refined(t.number, (n) => Number.isInteger(n) && n >= min, `a whole number from ${min}`, {
    type: 'integer',
    minimum: min,
    ...schema,
  });

/** The version of a resource's stream: the ETag is this number in quotes. */
export const StreamVersion = WholeNumber(0, {
  description: 'The stream version; the ETag is this number in quotes',
});

export const Sha256Hex = matching(/^[0-9a-f]{64}$/, 'a SHA-256 in hexadecimal');

/**
 * Compiles only when A and B are the same type: a domain type kept beside its decider, checked against the
 * codec that describes the resource, so that neither can gain a field the other lacks.
 */
export const typesAgree = <A, B extends A>(same: A extends B ? true : false): boolean => same;

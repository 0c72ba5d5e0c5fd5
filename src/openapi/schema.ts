import { describeBounds, type JsonBounds } from '../core/json-bounds.js';
import type { StrictObjectCodec } from '../http/codec.js';

/**
 * Small JSON Schema (2020-12, as OpenAPI 3.1 uses it) builders. Object schemas of request bodies and query
 * strings are built from the io-ts codecs the routes decode with: the codec names the fields and which are
 * required, the builder only adds what each field looks like, and refuses to build when the two disagree.
 */

export type Schema = { [keyword: string]: unknown };

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

export const string = (extra: Schema = {}): Schema => ({ type: 'string', ...extra });
export const integer = (minimum?: number, maximum?: number, extra: Schema = {}): Schema => ({
  type: 'integer',
  ...(minimum === undefined ? {} : { minimum }),
  ...(maximum === undefined ? {} : { maximum }),
  ...extra,
});
export const number = (minimum: number, maximum: number, extra: Schema = {}): Schema => ({
  type: 'number',
  minimum,
  maximum,
  ...extra,
});
export const boolean = (extra: Schema = {}): Schema => ({ type: 'boolean', ...extra });
/** At most 35 characters: DateTimeString (src/http/codec.ts) takes seconds to 9 decimals and an offset. */
export const dateTime = (description?: string): Schema =>
  string({ format: 'date-time', maxLength: 35, ...(description ? { description } : {}) });
export const enumOf = (values: readonly string[], extra: Schema = {}): Schema => ({
  type: 'string',
  enum: [...values],
  ...extra,
});
export const arrayOf = (items: Schema, extra: Schema = {}): Schema => ({ type: 'array', items, ...extra });
/** A JSON object whose members are up to the client (attributes, summaries). */
export const freeObject = (description: string): Schema => ({
  type: 'object',
  additionalProperties: true,
  description,
});

/** A free-form object a `boundedJson` codec decodes: the bounds come from the codec. */
export const boundedFreeObject = (codec: { readonly bounds: JsonBounds }, description: string): Schema => ({
  ...freeObject(`${description}; ${describeBounds(codec.bounds)}`),
  maxProperties: codec.bounds.maxKeys,
});

/** The schema, or null. A `$ref` cannot take siblings that change it, so a reference becomes a union. */
export const nullable = (schema: Schema): Schema => {
  if (typeof schema.type === 'string' && !('$ref' in schema)) {
    const { enum: values, ...rest } = schema;
    return {
      ...rest,
      type: [schema.type, 'null'],
      ...(Array.isArray(values) ? { enum: [...(values as unknown[]), null] } : {}),
    };
  }
  return { oneOf: [schema, { type: 'null' }] };
};

/** A closed object: every property named, the required ones listed, nothing else allowed. */
export const object = (
  required: Record<string, Schema>,
  optional: Record<string, Schema> = {},
  extra: Schema = {},
): Schema => ({
  type: 'object',
  ...(Object.keys(required).length > 0 ? { required: Object.keys(required) } : {}),
  properties: { ...required, ...optional },
  additionalProperties: false,
  ...extra,
});

/** The codec's field names, required ones first, in declaration order. */
export const codecFields = (codec: StrictObjectCodec): string[] => [
  ...codec.props.required,
  ...codec.props.optional,
];

/** Throws unless `described` names exactly the fields the codec knows. */
export const assertCoversCodec = (codec: StrictObjectCodec, described: readonly string[], what: string) => {
  const known = codecFields(codec);
  const undescribed = known.filter((field) => !described.includes(field));
  const unknown = described.filter((field) => !known.includes(field));
  if (undescribed.length > 0 || unknown.length > 0) {
    throw new Error(
      `The OpenAPI ${what} of "${codec.name}" does not match its codec:` +
        `${undescribed.length > 0 ? ` undescribed ${undescribed.join(', ')};` : ''}` +
        `${unknown.length > 0 ? ` not in the codec ${unknown.join(', ')}` : ''}`,
    );
  }
};

/** The schema of a JSON object a strictObject codec decodes: its fields and required list come from the codec. */
export const codecObject = (
  codec: StrictObjectCodec,
  properties: Record<string, Schema>,
  extra: Schema = {},
): Schema => {
  assertCoversCodec(codec, Object.keys(properties), 'schema');
  return {
    type: 'object',
    ...(codec.props.required.length > 0 ? { required: [...codec.props.required] } : {}),
    properties: Object.fromEntries(codecFields(codec).map((field) => [field, properties[field]!])),
    additionalProperties: false,
    ...extra,
  };
};

export interface QueryParameter {
  schema: Schema;
  description: string;
  /** For arrays: repeated (`type=A&type=B`), the OpenAPI default for query strings. */
  explode?: boolean;
  /** A value the service accepts, sent with the operation's example request. */
  example?: unknown;
}

/** The query parameters a strictObject query codec decodes, in its order; unknown parameters are refused. */
export const codecQuery = (codec: StrictObjectCodec, parameters: Record<string, QueryParameter>) => {
  assertCoversCodec(codec, Object.keys(parameters), 'query parameters');
  return codecFields(codec).map((name) => ({
    name,
    in: 'query',
    required: codec.props.required.includes(name),
    description: parameters[name]!.description,
    schema: parameters[name]!.schema,
    ...(parameters[name]!.explode === undefined ? {} : { explode: parameters[name]!.explode }),
    ...(parameters[name]!.example === undefined ? {} : { example: parameters[name]!.example }),
  }));
};

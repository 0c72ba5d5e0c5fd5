import * as t from 'io-ts';
import { describeBounds, type JsonBounds } from '../core/json-bounds.js';
import type { StrictObjectCodec } from '../http/codec.js';
import { noteOf, type JsonSchema } from '../http/schema-notes.js';

/**
 * JSON Schema (2020-12, as OpenAPI 3.1 uses it). The schemas of request bodies, query strings and the
 * resources are derived from the io-ts codecs (`schemaOf`): what a codec accepts is noted when it is built
 * (src/http/schema-notes.ts), so a field is declared once, and its bounds are those validation checks.
 * The small builders below are for what no codec decodes (responses of the service's own endpoints).
 */

export type Schema = JsonSchema;

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

/**
 * The schema, or null. A `$ref` cannot take siblings that change it, so a reference becomes a union; its
 * annotations (a description) stay beside the union.
 */
export const nullable = (schema: Schema): Schema => {
  if (typeof schema.type === 'string' && !('$ref' in schema)) {
    const { enum: values, ...rest } = schema;
    return {
      ...rest,
      type: [schema.type, 'null'],
      ...(Array.isArray(values) ? { enum: [...(values as unknown[]), null] } : {}),
    };
  }
  if ('$ref' in schema) {
    const { $ref, ...annotations } = schema;
    return { oneOf: [{ $ref }, { type: 'null' }], ...annotations };
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

export interface QueryParameter {
  /** The codec's schema when left out; given where the text's shape says more (a pattern, a format). */
  schema?: Schema;
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
    schema: parameters[name]!.schema ?? schemaOf(codec.fields[name]!),
    ...(parameters[name]!.explode === undefined ? {} : { explode: parameters[name]!.explode }),
    ...(parameters[name]!.example === undefined ? {} : { example: parameters[name]!.example }),
  }));
};

const isStrictObject = (codec: t.Mixed): codec is t.Mixed & StrictObjectCodec =>
  'props' in codec && 'fields' in codec;

/** `extra` over `base`; a description is put in front of the base's (a free-form object's bounds). */
const annotate = (base: Schema, extra: Schema): Schema => {
  const descriptions = [extra.description, base.description].filter((text) => typeof text === 'string');
  return {
    ...base,
    ...extra,
    ...(descriptions.length > 0 ? { description: descriptions.join('; ') } : {}),
  };
};

const literalSchema = (value: unknown): Schema => ({
  type: value === null ? 'null' : typeof value,
  const: value,
});

/** A union: nullable when one branch is t.null, an enum when every branch is a literal. */
const unionSchema = (types: readonly t.Mixed[]): Schema => {
  const others = types.filter((type) => type !== t.null);
  if (others.length < types.length) {
    const rest = others.length === 1 ? schemaOf(others[0]!) : unionSchema(others);
    return nullable(rest);
  }
  if (types.every((type) => type instanceof t.LiteralType)) {
    const values = types.map((type) => (type as t.LiteralType<string>).value);
    return { type: typeof values[0], enum: values };
  }
  return { oneOf: types.map((type) => schemaOf(type)) };
};

/** io-ts's own codecs, by what they accept. */
const builtInSchema = (codec: t.Mixed): Schema | undefined => {
  if (codec instanceof t.UnionType) return unionSchema(codec.types as t.Mixed[]);
  if (codec instanceof t.LiteralType) return literalSchema(codec.value);
  if (codec instanceof t.KeyofType) return { type: 'string', enum: Object.keys(codec.keys as object) };
  if (codec instanceof t.ArrayType || codec instanceof t.ReadonlyArrayType)
    return { type: 'array', items: schemaOf(codec.type as t.Mixed) };
  if (codec === t.Int) return { type: 'integer' };
  const primitives = new Map<t.Mixed, Schema>([
    [t.string, { type: 'string' }],
    [t.number, { type: 'number' }],
    [t.boolean, { type: 'boolean' }],
    [t.null, { type: 'null' }],
    [t.unknown, {}],
  ]);
  return primitives.get(codec);
};

/**
 * The JSON Schema of what `codec` accepts. A codec named as a component is a `$ref`, except as the root
 * of its own definition (`componentSchema`). Throws for a codec whose schema nothing noted, so that a new
 * kind of codec cannot go undocumented.
 */
export const schemaOf = (codec: t.Mixed, asDefinition = false): Schema => {
  const note = noteOf(codec);
  if (note?.component && !asDefinition) return ref(note.component);
  if (note) {
    const base = note.items
      ? { type: 'array', items: schemaOf(note.items) }
      : note.of
        ? schemaOf(note.of, asDefinition && note.component !== undefined)
        : {};
    return annotate(base, note.schema);
  }
  if (isStrictObject(codec)) {
    return object(
      Object.fromEntries(codec.props.required.map((name) => [name, schemaOf(codec.fields[name]!)])),
      Object.fromEntries(codec.props.optional.map((name) => [name, schemaOf(codec.fields[name]!)])),
    );
  }
  const builtIn = builtInSchema(codec);
  if (!builtIn)
    throw new Error(`No schema is noted for the codec "${codec.name}" (src/http/schema-notes.ts)`);
  return builtIn;
};

/** The definition of a codec named with `component`, for components.schemas. */
export const componentSchema = (codec: t.Mixed): Schema => schemaOf(codec, true);

/** Named components, by the name each codec was given with `component`. */
export const componentSchemas = (codecs: readonly t.Mixed[]): Record<string, Schema> =>
  Object.fromEntries(
    codecs.map((codec) => {
      const name = noteOf(codec)?.component;
      if (!name) throw new Error(`The codec "${codec.name}" is not named as a component`);
      return [name, componentSchema(codec)];
    }),
  );

/** The schemas of some fields of a codec (all of them by default), by name: a webhook event's data. */
export const fieldSchemas = (fields: t.Props, names: readonly string[] = Object.keys(fields)) =>
  Object.fromEntries(names.map((name) => [name, schemaOf(fields[name]!)])) as Record<string, Schema>;

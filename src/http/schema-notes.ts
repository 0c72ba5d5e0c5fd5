import type * as t from 'io-ts';

/**
 * What each codec accepts, as JSON Schema (2020-12, as OpenAPI 3.1 uses it), noted when the codec is built
 * so that src/openapi derives the API's schemas from the codecs the routes decode with (`schemaOf`) instead
 * of a second, hand-written description that could drift from them. The bounds are the codec's own
 * parameters; a description or an example is attached with `described`.
 */

export type JsonSchema = { [keyword: string]: unknown };

export interface SchemaNote {
  /** Keywords of the codec's own schema, over the schema of `of` (or of `items`) when there is one. */
  readonly schema: JsonSchema;
  /** The codec this one refines, parses or describes. */
  readonly of?: t.Mixed;
  /** A list's item codec: the schema is then an array of it. */
  readonly items?: t.Mixed;
  /** The name of the schema in components.schemas: every use but its own definition is a `$ref`. */
  readonly component?: string;
  /** The value a creation records when the body leaves the field out (absent fields are null, `{}`...). */
  readonly whenAbsent?: { readonly value: unknown };
}

const notes = new WeakMap<object, SchemaNote>();

/** Notes what `codec` accepts; returns it, for use in an expression. */
export const noted = <C extends t.Mixed>(codec: C, note: SchemaNote): C => {
  notes.set(codec, note);
  return codec;
};

export const noteOf = (codec: t.Mixed): SchemaNote | undefined => notes.get(codec);

/** A copy of the codec, decoding as it does: the note of a copy leaves the original's uses alone. */
const copyOf = <C extends t.Mixed>(codec: C): C =>
  Object.create(Object.getPrototypeOf(codec) as object, Object.getOwnPropertyDescriptors(codec)) as C;

/** A codec built by hand (a GeoJSON polygon) with the schema of what it accepts, written beside it. */
export const withSchema = <C extends t.Mixed>(codec: C, schema: JsonSchema): C => noted(codec, { schema });

/**
 * The codec with a description, examples or any other keyword for the API's documentation. A description
 * is added in front of the one the codec has (a free-form object's bounds), not in its place.
 */
export const described = <C extends t.Mixed>(codec: C, annotations: JsonSchema): C =>
  noted(copyOf(codec), { of: codec, schema: annotations });

/** The codec as a named schema of components.schemas (e.g. GeoPosition): its uses become `$ref`s. */
export const component = <C extends t.Mixed>(name: string, codec: C): C =>
  noted(copyOf(codec), { of: codec, schema: {}, component: name });

/**
 * An optional field with the value a creation records when the body leaves it out, declared with the
 * field so that a new field needs no second edit elsewhere (`absentValues`).
 */
export const absentAs = <C extends t.Mixed>(codec: C, value: t.TypeOf<C>): C =>
  noted(copyOf(codec), { of: codec, schema: {}, whenAbsent: { value } });

/** The value a field records when absent: its own `absentAs`, or that of the codec it describes. */
const whenAbsentOf = (codec: t.Mixed): { readonly value: unknown } | undefined => {
  const note = notes.get(codec);
  return note?.whenAbsent ?? (note?.of ? whenAbsentOf(note.of) : undefined);
};

/** The value each field records when absent, by field name; every field must declare one (`absentAs`). */
export const absentValues = <P extends t.Props>(fields: P): { [K in keyof P]: t.TypeOf<P[K]> } =>
  Object.fromEntries(
    Object.entries(fields).map(([name, codec]) => {
      const whenAbsent = whenAbsentOf(codec);
      if (!whenAbsent) throw new Error(`The optional field ${name} declares no value for when it is absent`);
      return [name, whenAbsent.value];
    }),
  ) as { [K in keyof P]: t.TypeOf<P[K]> };

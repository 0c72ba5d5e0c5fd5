import fc from 'fast-check';
import { deref } from './openapi.js';

/**
 * fast-check arbitraries for values that a JSON Schema of the OpenAPI document accepts, and for values
 * that it refuses. The subset the document uses: type (and type lists), const, enum, properties,
 * required, additionalProperties, items, prefixItems, minItems/maxItems, uniqueItems, minLength/maxLength,
 * pattern, format (date-time, uri), minimum/maximum, not, oneOf/anyOf/allOf, $ref, and `x-closed-ring`
 * (a GeoJSON ring whose last position repeats the first, which JSON Schema cannot say).
 */

type Obj = Record<string, any>;

const maxLengthCap = 40;
const int32 = 2 ** 31 - 1;

const withinLength = (schema: Obj) => (s: string) =>
  (schema.minLength === undefined || [...s].length >= (schema.minLength as number)) &&
  (schema.maxLength === undefined || [...s].length <= (schema.maxLength as number));

const stringArbitrary = (schema: Obj, options: ArbitraryOptions): fc.Arbitrary<string> => {
  let arbitrary: fc.Arbitrary<string>;
  const format = typeof schema.format === 'string' ? options.formats?.[schema.format] : undefined;
  if (format) {
    arbitrary = format;
  } else if (schema.format === 'date-time') {
    arbitrary = fc
      .date({
        min: new Date('1970-01-01T00:00:00Z'),
        max: new Date('2099-12-31T23:59:59Z'),
        noInvalidDate: true,
      })
      .map((date) => date.toISOString());
  } else if (schema.format === 'uri') {
    arbitrary = fc.webUrl({ validSchemes: ['https', 'http'] });
  } else if (typeof schema.pattern === 'string') {
    arbitrary = fc.stringMatching(new RegExp(schema.pattern));
  } else {
    const min = (schema.minLength as number | undefined) ?? 0;
    arbitrary = fc.string({
      minLength: min,
      maxLength: Math.max(
        min,
        Math.min((schema.maxLength as number | undefined) ?? maxLengthCap, maxLengthCap),
      ),
      unit: 'grapheme-ascii',
    });
  }
  const notPattern = (schema.not as Obj | undefined)?.pattern as string | undefined;
  return arbitrary
    .filter(withinLength(schema))
    .filter((s) => notPattern === undefined || !new RegExp(notPattern).test(s));
};

const integerArbitrary = (schema: Obj): fc.Arbitrary<number> => {
  const min = (schema.minimum as number | undefined) ?? -1000;
  const max = (schema.maximum as number | undefined) ?? 1_000_000;
  const small = fc.integer({ min: Math.max(min, -int32), max: Math.min(max, int32) });
  return max > int32 ? fc.oneof(small, fc.constant(max)) : small;
};

export interface ArbitraryOptions {
  /** Depth of free-form objects and arrays. */
  depth?: number;
  /** Values to use, half of the time, for object properties of these names (ids of real resources). */
  dictionary?: Record<string, readonly unknown[]>;
  /** Arbitraries for strings of these formats instead of the built-in ones. */
  formats?: Record<string, fc.Arbitrary<string>>;
}

/** Values the schema accepts. */
export const validValue = (doc: Obj, input: Obj, options: ArbitraryOptions = {}): fc.Arbitrary<unknown> => {
  const schema = deref(doc, input);
  const depth = options.depth ?? 0;
  const next = (s: Obj) => validValue(doc, s, { ...options, depth: depth + 1 });
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if (Array.isArray(schema.allOf)) return next(schema.allOf[0] as Obj);
  if (Array.isArray(schema.oneOf) || Array.isArray(schema.anyOf))
    return fc.oneof(...((schema.oneOf ?? schema.anyOf) as Obj[]).map(next));
  if (Array.isArray(schema.type))
    return fc.oneof(
      ...(schema.type as string[]).map((type) => validValue(doc, { ...schema, type }, options)),
    );
  switch (schema.type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'string':
      return stringArbitrary(schema, options);
    case 'integer':
      return integerArbitrary(schema);
    case 'number':
      return fc.double({
        min: (schema.minimum as number | undefined) ?? -1e9,
        max: (schema.maximum as number | undefined) ?? 1e9,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case 'array': {
      if (Array.isArray(schema.prefixItems)) return fc.tuple(...(schema.prefixItems as Obj[]).map(next));
      const minLength = (schema.minItems as number | undefined) ?? 0;
      const maxLength = Math.min((schema.maxItems as number | undefined) ?? minLength + 3, minLength + 3);
      const items = schema.items ? next(schema.items as Obj) : fc.jsonValue({ maxDepth: 1 });
      const list = schema.uniqueItems
        ? fc.uniqueArray(items, { minLength, maxLength, selector: (v) => JSON.stringify(v) })
        : fc.array(items, { minLength, maxLength });
      return schema['x-closed-ring']
        ? list.map((ring) => (ring.length > 0 ? [...ring.slice(0, -1), ring[0]] : ring))
        : list;
    }
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Obj>;
      const required = (schema.required ?? []) as string[];
      if (Object.keys(properties).length === 0) {
        return schema.additionalProperties === false
          ? fc.constant({})
          : fc.dictionary(
              fc.string({ minLength: 1, maxLength: 12 }),
              fc.jsonValue({ maxDepth: Math.max(0, 2 - depth) }),
              {
                maxKeys: 4,
              },
            );
      }
      const property = (key: string, s: Obj) => {
        const known = options.dictionary?.[key];
        return known && known.length > 0 ? fc.oneof(fc.constantFrom(...known), next(s)) : next(s);
      };
      return fc.record(
        Object.fromEntries(Object.entries(properties).map(([key, s]) => [key, property(key, s)])),
        { requiredKeys: required },
      );
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
};

/** A value of another JSON type than the schema's. */
const wrongType = (schema: Obj): fc.Arbitrary<unknown> => {
  const types = Array.isArray(schema.type)
    ? (schema.type as string[])
    : schema.type
      ? [schema.type as string]
      : [];
  const candidates: [string, fc.Arbitrary<unknown>][] = [
    ['string', fc.string({ maxLength: 8 })],
    ['number', fc.double({ noNaN: true, noDefaultInfinity: true })],
    ['boolean', fc.boolean()],
    ['object', fc.constant({ unexpected: true })],
    ['array', fc.constant([1, 'two'])],
    ['null', fc.constant(null)],
  ];
  const others = candidates.filter(
    ([type]) => !types.includes(type) && !(type === 'number' && types.includes('integer')),
  );
  return fc.oneof(...others.map(([, arbitrary]) => arbitrary));
};

/**
 * Bodies that an object schema refuses: a required property missing, an unknown property, a property of
 * the wrong type, or no object at all.
 */
export const invalidObject = (
  doc: Obj,
  input: Obj,
  options: ArbitraryOptions = {},
): fc.Arbitrary<unknown> => {
  const schema = deref(doc, input);
  const properties = (schema.properties ?? {}) as Record<string, Obj>;
  const required = (schema.required ?? []) as string[];
  const valid = validValue(doc, schema, options) as fc.Arbitrary<Record<string, unknown>>;
  const variants: fc.Arbitrary<unknown>[] = [
    fc.oneof(fc.constant([]), fc.constant('text'), fc.constant(42), fc.constant(null)),
    valid.map((value) => ({ ...value, 'not-a-field': 1 })),
  ];
  if (required.length > 0) {
    variants.push(
      fc.tuple(valid, fc.constantFrom(...required)).map(([value, key]) => {
        const { [key]: _dropped, ...rest } = value;
        return rest;
      }),
    );
  }
  const typed = Object.entries(properties).filter(([, s]) => {
    const resolved = deref(doc, s);
    return resolved.type !== undefined && !resolved.oneOf && !resolved.anyOf;
  });
  if (typed.length > 0) {
    variants.push(
      fc
        .tuple(valid, fc.constantFrom(...typed))
        .chain(([value, [key, s]]) => wrongType(deref(doc, s)).map((bad) => ({ ...value, [key]: bad }))),
    );
  }
  return fc.oneof(...variants);
};

/** Any JSON at all, or text that is not JSON. */
export const junkBody = (): fc.Arbitrary<string> =>
  fc.oneof(
    fc.json({ maxDepth: 3 }),
    fc.string({ maxLength: 60 }),
    fc.constantFrom('{', '{"a":', '[1,2', 'null', '""', '\u0000', '{"__proto__": {"x": 1}}'),
  );

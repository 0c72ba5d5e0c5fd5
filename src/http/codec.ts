import { isLeft } from 'fp-ts/lib/Either.js';
import * as t from 'io-ts';
import type { FieldError } from '../core/errors.js';
import { maxListedErrors, ValidationError } from '../core/errors.js';
import { boundsProblem, describeBounds, freeFormBounds, type JsonBounds } from '../core/json-bounds.js';
import { described, noted, type JsonSchema } from './schema-notes.js';

export { absentAs, absentValues, component, described, withSchema, type JsonSchema } from './schema-notes.js';

/**
 * io-ts at the edge. Codecs are named after what they expect ("a latitude between -90 and 90"), and the
 * reporter turns io-ts errors into field paths with those names. Past decode, code sees only valid values.
 */

const pathOf = (context: t.Context): string => {
  const keys: string[] = [];
  for (let index = 1; index < context.length; index++) {
    // Union branches and refinements repeat the parent key with a numeric or empty key: drop them.
    const parent = index > 1 ? context[index - 1]!.type : undefined;
    const { key } = context[index]!;
    if (!(parent instanceof t.UnionType || parent instanceof t.IntersectionType) && key !== '')
      keys.push(key);
  }
  return keys.join('.');
};

/** Every proper ancestor of a dotted path, the whole body ('') included: `a.b.c` has '', `a` and `a.b`. */
const ancestorsOf = (path: string): string[] => {
  const ancestors = [''];
  for (let dot = path.indexOf('.'); dot !== -1; dot = path.indexOf('.', dot + 1))
    ancestors.push(path.slice(0, dot));
  return ancestors;
};

/**
 * The most specific errors: a path's error is dropped when a deeper path under it also failed. Linear in
 * the number of errors (each path's ancestors are marked once), since a body at the size limit can fail in
 * hundreds of thousands of places.
 */
export const fieldErrors = (errors: t.Errors): FieldError[] => {
  const found = new Map<string, string>();
  const hasDeeper = new Set<string>();
  for (const error of errors) {
    const path = pathOf(error.context);
    if (found.has(path)) continue;
    const last = error.context[error.context.length - 1];
    found.set(
      path,
      last?.actual === undefined ? 'is required' : (error.message ?? `must be ${last.type.name}`),
    );
    if (path !== '') for (const ancestor of ancestorsOf(path)) hasDeeper.add(ancestor);
  }
  return [...found].filter(([path]) => !hasDeeper.has(path)).map(([path, message]) => ({ path, message }));
};

/**
 * An io-ts error that stands for itself and `unlisted` more failures of its kind, which were counted but
 * never built: a body at the size limit can have a hundred thousand unknown members.
 */
type CountedError = t.ValidationError & { readonly unlisted?: number };

const unlistedCount = (errors: t.Errors): number =>
  errors.reduce((sum, error: CountedError) => sum + (error.unlisted ?? 0), 0);

export const decodeOrThrow = <A, O>(codec: t.Type<A, O, unknown>, value: unknown): A => {
  const result = codec.decode(value);
  if (isLeft(result)) throw new ValidationError(fieldErrors(result.left), unlistedCount(result.left));
  return result.right;
};

/**
 * An object codec that refuses fields it does not know, naming them, rather than dropping them silently.
 * Unknown fields and invalid known fields are reported together, so one round trip shows every problem.
 */
export const strictObject = <R extends t.Props, O extends t.Props = Record<never, never>>(
  name: string,
  required: R,
  optional: O = {} as O,
) => {
  const requiredCodec = t.type(required);
  const optionalCodec = t.partial(optional);
  type Out = t.TypeOf<typeof requiredCodec> & t.TypeOf<typeof optionalCodec>;
  const known = new Set([...Object.keys(required), ...Object.keys(optional)]);
  const codec = new t.Type<Out, Out, unknown>(
    name,
    (u): u is Out => requiredCodec.is(u) && optionalCodec.is(u),
    (u, context) => {
      if (typeof u !== 'object' || u === null || Array.isArray(u))
        return t.failure(u, context, 'must be a JSON object');
      const input = u as Record<string, unknown>;
      const unknownKeys = Object.keys(input).filter((key) => !known.has(key));
      const errors: CountedError[] = unknownKeys.slice(0, maxListedErrors).map((key, index) => ({
        value: input[key],
        context: [...context, { key, type: t.unknown, actual: input[key] }],
        message: 'is not a known field',
        unlisted: index === 0 ? unknownKeys.length - Math.min(unknownKeys.length, maxListedErrors) : 0,
      }));
      // Only the known members are validated: t.type copies the object it decodes, all its members.
      const knownMembers: Record<string, unknown> = {};
      for (const key of known) if (Object.hasOwn(input, key)) knownMembers[key] = input[key];
      const requiredResult = requiredCodec.validate(knownMembers, context);
      const optionalResult = optionalCodec.validate(knownMembers, context);
      // concat, not push(...): a spread of a few hundred thousand errors overflows the stack.
      const failed = errors
        .concat(isLeft(requiredResult) ? requiredResult.left : [])
        .concat(isLeft(optionalResult) ? optionalResult.left : []);
      if (failed.length > 0 || isLeft(requiredResult) || isLeft(optionalResult)) return t.failures(failed);
      // Each codec copies the whole input; take every field from the codec that decoded it.
      const decoded: Record<string, unknown> = {};
      for (const key of Object.keys(required))
        decoded[key] = (requiredResult.right as Record<string, unknown>)[key];
      for (const key of Object.keys(optional)) {
        if (key in knownMembers) decoded[key] = (optionalResult.right as Record<string, unknown>)[key];
      }
      return t.success(decoded as Out);
    },
    t.identity,
  );
  // The field names, and each field's codec, for what describes the API (src/openapi): read-only.
  const props: StrictObjectProps = { required: Object.keys(required), optional: Object.keys(optional) };
  return Object.assign(codec, { props, fields: { ...required, ...optional } });
};

/** The fields a strictObject codec knows: `required` must be present, `optional` may be. */
export interface StrictObjectProps {
  readonly required: readonly string[];
  readonly optional: readonly string[];
}

/** Any codec built with strictObject. */
export type StrictObjectCodec = t.Decoder<unknown, object> & {
  readonly props: StrictObjectProps;
  readonly fields: t.Props;
};

/**
 * A refinement with a message of its own. `schema` holds the keywords that say what the predicate checks
 * (a pattern, bounds) on top of the base's schema.
 */
export const refined = <A>(
  base: t.Type<A, A, unknown>,
  predicate: (a: A) => boolean,
  expectation: string,
  schema: JsonSchema = {},
) =>
  noted(
    new t.Type<A, A, unknown>(
      expectation,
      (u): u is A => base.is(u) && predicate(u),
      (u, context) => {
        const result = base.validate(u, context);
        if (isLeft(result)) return t.failure(u, context, `must be ${expectation}`);
        return predicate(result.right) ? result : t.failure(u, context, `must be ${expectation}`);
      },
      t.identity,
    ),
    { of: base, schema },
  );

/**
 * A list of `min` to `max` items (distinct ones if `distinct`). Its length is checked before any item is,
 * so a list at the body limit costs one comparison; a failing item is named by its index (`events.1`), as
 * `refined` over t.array, which folds them into one message about the list, would not.
 */
export const listOf = <A>(
  item: t.Type<A, A, unknown>,
  { min, max, distinct = false }: { min: number; max: number; distinct?: boolean },
  expectation: string,
) => {
  const items = t.array(item);
  const fits = (list: readonly A[]) =>
    list.length >= min && list.length <= max && (!distinct || new Set(list).size === list.length);
  const list = new t.Type<A[], A[], unknown>(
    expectation,
    (u): u is A[] => items.is(u) && fits(u),
    (u, context) => {
      if (!Array.isArray(u) || u.length < min || u.length > max)
        return t.failure(u, context, `must be ${expectation}`);
      const result = items.validate(u, context);
      if (isLeft(result) || fits(result.right)) return result;
      return t.failure(u, context, `must be ${expectation}`);
    },
    t.identity,
  );
  return noted(list, {
    items: item,
    schema: { minItems: min, maxItems: max, ...(distinct ? { uniqueItems: true } : {}) },
  });
};

/** One of a few strings (a sort, a status): the schema lists them. */
export const oneOf = <V extends string>(values: readonly V[]) =>
  refined(
    // The predicate is what makes a string one of the values.
    t.string as unknown as t.Type<V, V, unknown>,
    (s) => values.includes(s),
    `one of ${values.join(', ')}`,
    { enum: [...values] },
  );

export const boundedString = (min: number, max: number) =>
  refined(t.string, (s) => s.length >= min && s.length <= max, `a string of ${min} to ${max} characters`, {
    minLength: min,
    maxLength: max,
  });

/** Text a person writes (a name, notes): any characters, within its length. */
export const plainText = (min: number, max: number) =>
  described(boundedString(min, max), { contentMediaType: 'text/plain' });

/** A password or secret: any characters, within its length; UIs hide what is typed. */
export const secretText = (min: number, max: number) =>
  described(boundedString(min, max), { format: 'password' });

export const numberBetween = (min: number, max: number, what = 'a number') =>
  refined(t.number, (n) => Number.isFinite(n) && n >= min && n <= max, `${what} between ${min} and ${max}`, {
    minimum: min,
    maximum: max,
  });

const isoDateTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * Whether an ISO 8601 date-time names a moment of the calendar: Date.parse rolls 2026-02-30 over into
 * March, so the year, month and day are checked against the days of that month, and the time and offset
 * against their ranges (no leap second: 60 is refused).
 */
export const isCalendarDateTime = (text: string): boolean => {
  const match =
    /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?[^Z+-]*(?:Z|[+-](\d{2}):(\d{2}))$/i.exec(text);
  if (!match) return false;
  const [year, month, day, hour, minute, second = 0, offsetHours = 0, offsetMinutes = 0] = match
    .slice(1)
    .map((part) => (part === undefined ? undefined : Number(part)));
  // setUTCFullYear, not Date.UTC, which reads years 0 to 99 as 1900 to 1999.
  const daysInMonth = new Date(new Date(0).setUTCFullYear(year!, month, 0)).getUTCDate();
  return (
    month! >= 1 &&
    month! <= 12 &&
    day! >= 1 &&
    day! <= daysInMonth &&
    hour! <= 23 &&
    minute! <= 59 &&
    second <= 59 &&
    offsetHours <= 23 &&
    offsetMinutes <= 59 &&
    !Number.isNaN(Date.parse(text))
  );
};

/**
 * An ISO 8601 date-time with an offset, normalized to UTC (`toISOString`), so that strings sort by time.
 * At most 35 characters: seconds to 9 decimals and an offset.
 */
export const DateTimeString = noted(
  new t.Type<string, string, unknown>(
    'an ISO 8601 date-time with a time zone',
    (u): u is string => typeof u === 'string' && isoDateTime.test(u) && isCalendarDateTime(u),
    (u, context) => {
      if (typeof u !== 'string' || !isoDateTime.test(u)) {
        return t.failure(
          u,
          context,
          'must be an ISO 8601 date-time with a time zone, e.g. 2026-05-01T09:30:00Z',
        );
      }
      return isCalendarDateTime(u)
        ? t.success(new Date(Date.parse(u)).toISOString())
        : t.failure(u, context, 'is not a real date: no such day or time in the calendar');
    },
    t.identity,
  ),
  { schema: { type: 'string', format: 'date-time', maxLength: 35 } },
);

export const ResourceId = refined(
  t.string,
  (s) => /^[A-Za-z0-9_-]{1,64}$/.test(s),
  'an id of 1 to 64 letters, digits, _ or -',
  { maxLength: 64, pattern: '^[A-Za-z0-9_-]{1,64}$' },
);

export const PlainObject = noted(
  new t.Type<Record<string, unknown>, Record<string, unknown>, unknown>(
    'a JSON object',
    (u): u is Record<string, unknown> => typeof u === 'object' && u !== null && !Array.isArray(u),
    (u, context) =>
      typeof u === 'object' && u !== null && !Array.isArray(u)
        ? t.success(u as Record<string, unknown>)
        : t.failure(u, context, 'must be a JSON object'),
    t.identity,
  ),
  { schema: { type: 'object', additionalProperties: true } },
);

/**
 * A free-form JSON field, bounded (./json-bounds.ts): what `base` accepts, nested no deeper and with no
 * more keys than the read side can hold. Checked before anything recursive (merge patch, JSON.stringify)
 * sees the value; a refusal names the field, and says where inside it. Every free-form field uses it.
 */
export const boundedJson = <A>(base: t.Type<A, A, unknown>, bounds: JsonBounds = freeFormBounds) =>
  noted(
    Object.assign(
      new t.Type<A, A, unknown>(
        `${base.name} ${describeBounds(bounds)}`,
        (u): u is A => base.is(u) && boundsProblem(u, bounds) === undefined,
        (u, context) => {
          const problem = boundsProblem(u, bounds);
          return problem === undefined ? base.validate(u, context) : t.failure(u, context, problem);
        },
        t.identity,
      ),
      { bounds },
    ),
    {
      of: base,
      schema: { description: describeBounds(bounds), maxProperties: bounds.maxKeys },
    },
  );

/** A free-form JSON object (`attributes`), within the bounds of free-form fields. */
export const FreeJsonObject = boundedJson(PlainObject);

/** Query strings arrive as text: these codecs parse it. `schema` is that of the text the parameter takes. */
export const singleParam = <A>(
  name: string,
  parse: (s: string) => A | undefined,
  message: string,
  schema: JsonSchema = { type: 'string' },
) =>
  noted(
    new t.Type<A, A, unknown>(
      name,
      (_u): _u is A => false,
      (u, context) => {
        if (Array.isArray(u)) return t.failure(u, context, 'must be given once');
        const parsed = typeof u === 'string' ? parse(u) : undefined;
        return parsed === undefined ? t.failure(u, context, message) : t.success(parsed);
      },
      t.identity,
    ),
    { schema },
  );

export const wholeNumberParam = (min: number, max: number) =>
  singleParam(
    `a whole number from ${min} to ${max}`,
    (s) => (/^\d{1,16}$/.test(s) && Number(s) >= min && Number(s) <= max ? Number(s) : undefined),
    `must be a whole number from ${min} to ${max}`,
    { type: 'integer', minimum: min, maximum: max },
  );

/** A parameter that takes one value of `codec`, whose schema it has. */
export const paramOf = <A>(codec: t.Type<A, A, unknown>) =>
  noted(
    singleParam(
      codec.name,
      (s) => {
        const result = codec.decode(s);
        return result._tag === 'Right' ? result.right : undefined;
      },
      `must be ${codec.name}`,
    ),
    { of: codec, schema: {} },
  );

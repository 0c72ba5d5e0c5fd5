/**
 * Bounds on JSON, so that the write side refuses what the read side cannot hold. SQLite's JSON functions
 * refuse documents nested 1,000 deep, and code that walks a value recursively (JSON.stringify, merge patch,
 * io-ts, structuredClone) overflows the stack long before 100,000: an accepted event that a projection can
 * never apply would stop it for every tenant. Both checks here are iterative, so they are safe on any input.
 */

/** How deep a whole request body may nest: generous, so that every legitimate body passes. */
export const maxBodyDepth = 64;

/** The bounds of a free-form field (observation and location `attributes`, a CV model's summary). */
export interface JsonBounds {
  /** Nesting levels, the field's own object or array counting as 1: `{}` is 1 deep, `{"a": {}}` 2. */
  readonly maxDepth: number;
  /** Members of any one object. */
  readonly maxKeys: number;
  /** Object members and array items, counted over the whole value. */
  readonly maxMembers: number;
  /** Characters of an object key. */
  readonly maxKeyLength: number;
}

export const freeFormBounds: JsonBounds = { maxDepth: 32, maxKeys: 256, maxMembers: 4096, maxKeyLength: 256 };

/**
 * Object members and array items a whole request body may hold: twice a free-form field's bound, and more
 * than any body's fields and lists add to that. A 1 MB body of a hundred thousand members took V8 longer to
 * parse than anything else a request costs; refused from its text, it costs a scan.
 */
export const maxBodyMembers = 2 * freeFormBounds.maxMembers;

/** The bounds in words, for messages, the OpenAPI document and the docs. */
export const describeBounds = (bounds: JsonBounds = freeFormBounds): string =>
  `nested at most ${bounds.maxDepth} levels deep, with at most ${bounds.maxKeys} keys in any object, ` +
  `${bounds.maxMembers} members and items in all, and keys of at most ${bounds.maxKeyLength} characters ` +
  'without U+0000';

const openBrace = 0x7b;
const openBracket = 0x5b;
const closeBrace = 0x7d;
const closeBracket = 0x5d;
const quote = 0x22;
const backslash = 0x5c;

const comma = 0x2c;

/** Which bound JSON text exceeds, and the member of the outer object it does so in ('' when none). */
export interface TextBoundExceeded {
  bound: 'depth' | 'members';
  field: string;
}

/**
 * Where JSON text nests deeper than `maxDepth` objects and arrays, or holds more than `maxMembers` object
 * members and array items in all, found by one scan of the characters (brackets and commas inside strings,
 * escaped quotes included, do not count), or undefined when it does neither. Stops at the first bound
 * passed, and names the member of the outer object it is in, so that a refusal can name the field. The
 * text need not be valid JSON: the parser judges that. Members are counted by their separators, so the
 * count may be one short per container: the bound is a guard against cost, not a quota.
 */
export const textBoundExceeded = (
  text: string,
  { maxDepth, maxMembers = Infinity }: { maxDepth: number; maxMembers?: number },
): TextBoundExceeded | undefined => {
  let depth = 0;
  let separators = 0;
  let inString = false;
  let stringStart = 0;
  let outerIsObject = false;
  // The last string closed directly in the outer object, and the one before the container being entered.
  let lastOuterString: [number, number] | undefined;
  let field: [number, number] | undefined;
  const exceeded = (bound: TextBoundExceeded['bound'], inField: boolean): TextBoundExceeded => ({
    bound,
    field: inField && field ? fieldName(text.slice(field[0], field[1])) : '',
  });
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === backslash)
        index++; // the escaped character, whatever it is
      else if (code === quote) {
        inString = false;
        if (depth === 1) lastOuterString = [stringStart, index + 1];
      }
    } else if (code === quote) {
      inString = true;
      stringStart = index;
    } else if (code === openBrace || code === openBracket) {
      if (depth === 0) outerIsObject = code === openBrace;
      if (depth === 1) field = outerIsObject ? lastOuterString : undefined;
      depth++;
      if (depth > maxDepth) return exceeded('depth', true);
    } else if ((code === closeBrace || code === closeBracket) && depth > 0) depth--;
    else if (code === comma && ++separators >= maxMembers) return exceeded('members', depth > 1);
  }
  return undefined;
};

/** Where JSON text nests deeper than `limit` (textBoundExceeded's depth alone), or undefined. */
export const depthExceeded = (text: string, limit: number): { field: string } | undefined => {
  const found = textBoundExceeded(text, { maxDepth: limit });
  return found && { field: found.field };
};

/** A member name as JSON text, decoded; '' when it is not a short, valid string. */
const fieldName = (token: string): string => {
  if (token.length > 258) return '';
  try {
    const name = JSON.parse(token) as unknown;
    return typeof name === 'string' ? name : '';
  } catch {
    return '';
  }
};

/**
 * What makes a parsed JSON value exceed the bounds, in words naming where (`a.b has 300 keys…`, relative
 * to the value), or undefined when it is within them. Walks with a stack of its own, not recursion.
 */
export const boundsProblem = (value: unknown, bounds: JsonBounds = freeFormBounds): string | undefined => {
  const pending: { value: unknown; path: string; depth: number }[] = [{ value, path: '', depth: 1 }];
  const at = (path: string) =>
    path === '' ? '' : ` (at ${path.length > 200 ? `${path.slice(0, 200)}…` : path})`;
  let members = 0;
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value: node, path, depth } = next;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > bounds.maxDepth) return `must be nested at most ${bounds.maxDepth} levels deep${at(path)}`;
    // Sizes are checked before any member is visited, so an object of a hundred thousand keys costs one count.
    const keys = Array.isArray(node) ? undefined : Object.keys(node);
    const size = keys ? keys.length : (node as unknown[]).length;
    if (keys && size > bounds.maxKeys)
      return `must have at most ${bounds.maxKeys} keys in any object${at(path)}`;
    members += size;
    if (members > bounds.maxMembers) return `must have at most ${bounds.maxMembers} members and items in all`;
    for (let index = 0; index < size; index++) {
      const key = keys ? keys[index]! : String(index);
      if (keys && (key.length > bounds.maxKeyLength || key.includes('\u0000')))
        return `must have keys of at most ${bounds.maxKeyLength} characters without U+0000${at(path)}`;
      const item = keys ? (node as Record<string, unknown>)[key] : (node as unknown[])[index];
      pending.push({ value: item, path: path === '' ? key : `${path}.${key}`, depth: depth + 1 });
    }
  }
  return undefined;
};

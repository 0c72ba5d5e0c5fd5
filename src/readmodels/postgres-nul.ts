import { depthExceeded } from '../core/json-bounds.js';

/**
 * jsonb has no place for U+0000 in a string, though JSON and the other stores do, and the API takes it in
 * free text. A document holding one is stored with its strings escaped, and flagged (`escaped`), so that
 * it reads back exactly: U+E000 (private use) is the escape character, `\uE000e` stands for U+E000 itself
 * and `\uE000` followed by `0` for U+0000. Documents without either character (nearly all) are stored as
 * they are, found by one scan of their JSON text. In an escaped document, the generated columns see the
 * escaped strings: a list field holding U+0000 sorts and filters by its escaped form.
 */

const escapeChar = '\uE000';

/**
 * Documents nested deeper than this are refused (the event is parked): PostgreSQL would take them, but
 * MongoDB refuses past 100 levels, and a read model must hold the same documents on every backend.
 */
export const maxDocumentDepth = 100;

const mapStrings = (value: unknown, map: (text: string) => string): unknown => {
  if (typeof value === 'string') return map(value);
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, map));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [map(key), mapStrings(item, map)] as const),
  );
};

/** U+E000 first, so that the escape characters put in for U+0000 are not escaped again. */
const escape = (text: string): string =>
  text.replaceAll(escapeChar, `${escapeChar}e`).replaceAll('\u0000', `${escapeChar}0`);

const unescape = (text: string): string =>
  text.replace(/\uE000([e0])/g, (_, code: string) => (code === 'e' ? escapeChar : '\u0000'));

/** The document as the JSON text to store, and whether its strings were escaped; null deletes. */
export const toStored = (doc: unknown, describe: () => string): { json: string | null; escaped: boolean } => {
  if (doc === null) return { json: null, escaped: false };
  const json = JSON.stringify(doc);
  if (depthExceeded(json, maxDocumentDepth))
    throw new Error(`The JSON of ${describe()} nests deeper than ${maxDocumentDepth} levels`);
  // JSON.stringify writes U+0000 as \u0000: a match may also be an escaped backslash before "u0000",
  // which only takes the slower, still exact, path.
  if (!json.includes('\\u0000') && !json.includes(escapeChar)) return { json, escaped: false };
  return { json: JSON.stringify(mapStrings(doc, escape)), escaped: true };
};

/** A stored document as it was given. */
export const fromStored = <D>(doc: unknown, escaped: boolean): D =>
  (escaped ? mapStrings(doc, unescape) : doc) as D;

/** A stored document's JSON text as it was given. */
export const jsonFromStored = (json: string, escaped: boolean): string =>
  escaped ? JSON.stringify(fromStored(JSON.parse(json), true)) : json;

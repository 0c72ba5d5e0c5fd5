import { hash, randomBytes } from 'node:crypto';
import type { NewEventMetadata } from '../core/events.js';
import { topLevelSecrets } from '../core/secret-fields.js';

/**
 * Tamper evidence: every event's hash covers its content and the hash of the event before it in its
 * stream, so changing or removing any stored event breaks the chain from there on. The hash is taken over
 * canonical JSON (keys sorted at every level), so it does not depend on how a backend orders keys.
 */
export const canonicalJson = (value: unknown): string => {
  // Loops and one string instead of entries, filter, map and join: it runs once per event on every append
  // and every verified event, and this form costs half as much for the same output.
  if (Array.isArray(value)) {
    let text = '[';
    for (let index = 0; index < value.length; index += 1) {
      // As join() did: an element JSON has no text for (undefined, a function) leaves its slot empty.
      const item = canonicalJson(value[index]) as string | undefined;
      text += `${index === 0 ? '' : ','}${item ?? ''}`;
    }
    return `${text}]`;
  }
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    let text = '{';
    for (const key of Object.keys(record).sort()) {
      const item = record[key];
      if (item === undefined) continue;
      text += `${text.length === 1 ? '' : ','}${JSON.stringify(key)}:${canonicalJson(item)}`;
    }
    return `${text}}`;
  }
  return JSON.stringify(value);
};

/** The hash of the stream's first event chains to this. */
export const genesisHash = '';

export interface ChainedContent {
  streamName: string;
  streamVersion: number;
  id: string;
  type: string;
  data: unknown;
  metadata: NewEventMetadata;
}

/**
 * How JSON.stringify writes a value, against canonicalJson: `canonical` (the same text: plain objects whose
 * keys already come in sorted order, arrays without holes, undefined or functions), `reordered` (the same
 * JSON but for key order), or `other` (a Date, a class, a function: texts that differ in more than order).
 * Events an append stored in canonical form parse back `canonical`, and JSON.stringify is several times
 * cheaper than canonicalJson.
 */
type JsonShape = 'canonical' | 'reordered' | 'other';

const shapeOf = (value: unknown): JsonShape => {
  if (value === null) return 'canonical';
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      return 'canonical';
    case 'object':
      break;
    default:
      return 'other';
  }
  let shape: JsonShape = 'canonical';
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) {
      const itemShape = item === undefined ? 'other' : shapeOf(item);
      if (itemShape === 'other') return 'other';
      if (itemShape === 'reordered') shape = 'reordered';
    }
    return shape;
  }
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype && prototype !== null) return 'other';
  const record = value as Record<string, unknown>;
  let previous: string | undefined;
  for (const key of Object.keys(record)) {
    if (previous !== undefined && !(previous < key)) shape = 'reordered';
    previous = key;
    const item = record[key];
    if (item === undefined) continue;
    const itemShape = shapeOf(item);
    if (itemShape === 'other') return 'other';
    if (itemShape === 'reordered') shape = 'reordered';
  }
  return shape;
};

/** The canonical JSON of a value, the cheap way when it is canonical already. */
const canonicalText = (value: unknown): string =>
  shapeOf(value) === 'canonical' ? JSON.stringify(value) : canonicalJson(value);

/** canonicalJson of the whole chained content, written from the canonical texts of its data and metadata. */
const hashOver = (previousHash: string, event: ChainedContent, data: string, metadata: string): string =>
  // One-shot hash (Node 20.12 on): a few times cheaper than a Hash object for input this short.
  hash(
    'sha256',
    `{"data":${data},"id":${JSON.stringify(event.id)},"metadata":${metadata},` +
      `"previousHash":${JSON.stringify(previousHash)},"streamName":${JSON.stringify(event.streamName)},` +
      `"streamVersion":${JSON.stringify(event.streamVersion)},"type":${JSON.stringify(event.type)}}`,
  );

/** Content hashOver can write: anything else is hashed the long way, exactly as it always was. */
const isPlainContent = (event: ChainedContent): boolean =>
  typeof event.id === 'string' &&
  typeof event.type === 'string' &&
  typeof event.streamName === 'string' &&
  typeof event.streamVersion === 'number' &&
  event.data !== undefined &&
  event.metadata !== undefined;

/** The hash of content as it is hashed: data and metadata as given, whatever they hold. */
const contentHash = (previousHash: string, event: ChainedContent): string =>
  !isPlainContent(event)
    ? hash(
        'sha256',
        canonicalJson({
          previousHash,
          streamName: event.streamName,
          streamVersion: event.streamVersion,
          id: event.id,
          type: event.type,
          data: event.data,
          metadata: event.metadata,
        }),
      )
    : hashOver(previousHash, event, canonicalText(event.data), canonicalText(event.metadata));

/*
 * Secret fields (credential hashes, sealed secrets) are committed to, not hashed as they are: the hash
 * covers `{"commitment": sha256(canonicalJson({salt, value}))}` in their place, with a random salt per
 * field kept in `metadata.salts`. An export then shows the commitment instead of the value, and anyone can
 * recompute the hash from it, while the salt keeps the value from being guessed off the commitment.
 * Events without `metadata.salts` (those with no secret, and every event stored before salts existed) are
 * hashed exactly as they always were. docs/auditors.md specifies this for verifiers outside the service.
 */

const saltsOf = (metadata: unknown): Record<string, string> | undefined =>
  (metadata as { salts?: Record<string, string> } | undefined)?.salts;

/** The digest a secret field's value is committed to, with its salt: lowercase hex SHA-256. */
export const commitment = (salt: string, value: unknown): string =>
  hash('sha256', canonicalJson({ salt, value }));

/**
 * The event as its hash covers it, and as an export shows it: each field named in `metadata.salts`
 * replaced by its commitment, and the metadata without the salts. Unchanged without salts.
 */
export const committedForm = <Event extends { data: unknown; metadata: unknown }>(event: Event): Event => {
  const salts = saltsOf(event.metadata);
  if (salts === undefined) return event;
  const { salts: _salts, ...metadata } = event.metadata as Record<string, unknown>;
  const data = { ...(event.data as Record<string, unknown>) };
  for (const [field, salt] of Object.entries(salts)) {
    if (Object.hasOwn(data, field)) data[field] = { commitment: commitment(salt, data[field]) };
  }
  return { ...event, data, metadata };
};

/** A fresh salt: 16 random bytes, base64url without padding. */
const newSalt = (): string => randomBytes(16).toString('base64url');

/**
 * The event with a salt for each secret field at the top of its data, in `metadata.salts`; as it was when
 * it has none. Salts it already has are kept, so that an event copied from another store hashes the same.
 */
export const withSalts = <Event extends ChainedContent>(event: Event): Event => {
  if (saltsOf(event.metadata) !== undefined) return event;
  const fields = topLevelSecrets(event.data);
  if (fields.length === 0) return event;
  const salts = Object.fromEntries(fields.map((field) => [field, newSalt()]));
  return { ...event, metadata: { ...event.metadata, salts } };
};

/** The event's hash: over its committed form, chained to the hash of the event before it in its stream. */
export const eventHash = (previousHash: string, event: ChainedContent): string =>
  contentHash(previousHash, saltsOf(event.metadata) === undefined ? event : committedForm(event));

/** Stored text: canonical JSON when that is only a reordering of keys, else as JSON.stringify writes it. */
const storedTexts = (value: unknown): { stored: string; canonical: string } => {
  const shape = shapeOf(value);
  if (shape === 'other') return { stored: JSON.stringify(value), canonical: canonicalJson(value) };
  const canonical = shape === 'canonical' ? JSON.stringify(value) : canonicalJson(value);
  return { stored: canonical, canonical };
};

/**
 * What an append stores, and the event's hash. The data and metadata are stored as canonical JSON when
 * that is only a reordering of their keys, so that they parse back into values JSON.stringify writes
 * canonically and verifying costs less; anything else (a Date, say) is stored as JSON.stringify writes it.
 * An event with secret fields is stored with their salts (withSalts), and hashed over its committed form.
 */
export const chainEvent = (
  previousHash: string,
  given: ChainedContent,
): { data: string; metadata: string; hash: string } => {
  const event = withSalts(given);
  if (!isPlainContent(event)) {
    const chained = eventHash(previousHash, event);
    return { data: JSON.stringify(event.data), metadata: JSON.stringify(event.metadata), hash: chained };
  }
  const data = storedTexts(event.data);
  const metadata = storedTexts(event.metadata);
  // Rare (credentials and webhook secrets): the committed form is hashed the long way.
  if (event !== given)
    return { data: data.stored, metadata: metadata.stored, hash: eventHash(previousHash, event) };
  return {
    data: data.stored,
    metadata: metadata.stored,
    hash: hashOver(previousHash, event, data.canonical, metadata.canonical),
  };
};

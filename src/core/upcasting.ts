import type { RecordedEvent } from './events.js';

/**
 * Schema evolution on read. Events are immutable: an event keeps the data shape and `schemaVersion` it was
 * written with. Every event store adapter passes what it reads through `upcast`, so the rest of the code
 * (folds, projections, the history API, webhooks) only ever sees the current shape of each event type.
 */

/** Turns the data of one version into the data of the next version. Pure; never mutates its input. */
export type Upcaster = (data: unknown) => unknown;

export interface EventSchema {
  /** The version new events of this type are written at. */
  current: number;
  /** By the version they read: `upcasters[n]` turns version n into version n + 1. */
  upcasters: Readonly<Record<number, Upcaster>>;
}

/** Event types with more than one version. A type not listed is at version 1 and is never changed. */
export type UpcasterRegistry = Readonly<Record<string, EventSchema>>;

/** Refuses a registry with a gap in a chain: an event of a version without an upcaster could not be read. */
export const checkRegistry = (registry: UpcasterRegistry): UpcasterRegistry => {
  for (const [type, { current, upcasters }] of Object.entries(registry)) {
    if (!Number.isInteger(current) || current < 1)
      throw new Error(`${type}: the current version must be a whole number from 1`);
    for (let version = 1; version < current; version += 1) {
      if (typeof upcasters[version] !== 'function')
        throw new Error(`${type}: no upcaster from version ${version} to ${version + 1}`);
    }
  }
  return registry;
};

/** The upcast function of a registry: what a store opened with it applies to every event it reads. */
export const upcaster = (registry: UpcasterRegistry) =>
  // A Map, so that an event type such as `constructor` never finds something on Object.prototype.
  upcasterOf(new Map(Object.entries(checkRegistry(registry))));

const upcasterOf =
  (schemas: ReadonlyMap<string, EventSchema>) =>
  <E extends RecordedEvent>(event: E): E => {
    const schema = schemas.get(event.type);
    if (!schema) return event;
    // Metadata without a version predates versioning: version 1.
    const stored = (event.metadata as Partial<RecordedEvent['metadata']> | undefined)?.schemaVersion ?? 1;
    // At the current version, or written by a newer release than this one: nothing to do, nothing we could do.
    if (stored >= schema.current) return event;
    let data = event.data;
    for (let version = stored; version < schema.current; version += 1)
      data = schema.upcasters[version]!(data);
    return { ...event, data, metadata: { ...event.metadata, schemaVersion: schema.current } };
  };

/**
 * The schema histories of several features as one registry; an event type with two histories is refused,
 * since its events could be read two ways.
 */
export const mergeEventSchemas = (
  registries: readonly (UpcasterRegistry | undefined)[],
): UpcasterRegistry => {
  const merged = new Map<string, EventSchema>();
  for (const registry of registries) {
    for (const [type, schema] of Object.entries(checkRegistry(registry ?? {}))) {
      const known = merged.get(type);
      if (known && known !== schema) throw new Error(`${type}: two schema histories are registered`);
      merged.set(type, schema);
    }
  }
  return Object.fromEntries(merged);
};

/** The version new events of `type` are written at under `registry`: 1 for a type it does not list. */
export const currentVersionIn = (registry: UpcasterRegistry, type: string): number =>
  Object.hasOwn(registry, type) ? registry[type]!.current : 1;

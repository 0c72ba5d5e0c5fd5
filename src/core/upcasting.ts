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

/** The upcast function of a registry; `upcast` below is the one of the registry the features fill. */
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
 * The event types of the service that have had more than one version, as the features register them
 * (src/features.ts, which src/stores.ts imports): core knows no feature.
 */
const registered = new Map<string, EventSchema>();

/** Adds a feature's schema histories; an event type registered twice must be registered the same. */
export const registerEventSchemas = (registry: UpcasterRegistry): void => {
  for (const [type, schema] of Object.entries(checkRegistry(registry))) {
    const known = registered.get(type);
    if (known && known !== schema) throw new Error(`${type}: two schema histories are registered`);
    registered.set(type, schema);
  }
};

/** Every registered event type with more than one version. */
export const eventSchemas = (): UpcasterRegistry => Object.fromEntries(registered);

/** Brings an event read from a store to the current version of its type; other events pass unchanged. */
export const upcast: <E extends RecordedEvent>(event: E) => E = upcasterOf(registered);

/** The version new events of this type are written at. */
export const currentSchemaVersion = (type: string): number => registered.get(type)?.current ?? 1;

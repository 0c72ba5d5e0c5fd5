import { toEnvelope } from '../core/command-handler.js';
import type { Decider, DomainEvent } from '../core/decider.js';
import type { RecordedEvent } from '../core/events.js';
import type { CollectionSpec, DocumentKey } from './port.js';
import type { Projection } from './projection.js';

/**
 * A read model whose documents are an aggregate's own state, folded with the aggregate's evolve: the
 * list and a single read can then never disagree about what an event means.
 */
export const aggregateProjection = <State, Event extends DomainEvent, Doc>(options: {
  name: string;
  collection: CollectionSpec;
  decider: Pick<Decider<State, never, Event>, 'evolve'>;
  eventTypes: readonly Event['type'][];
  /** The events whose evolve ignores the state before them (see Projection.creates). */
  creates?: readonly Event['type'][];
  key: (event: RecordedEvent<Event['type'], Event['data']>) => DocumentKey;
  toState: (doc: Doc | null) => State;
  toDoc: (state: State) => Doc | null;
}): Projection<Doc> => ({
  name: options.name,
  collection: options.collection,
  eventTypes: options.eventTypes,
  ...(options.creates ? { creates: options.creates } : {}),
  documentKey: (event) => options.key(event),
  evolve: (doc, event) =>
    options.toDoc(options.decider.evolve(options.toState(doc), toEnvelope<Event>(event))),
});

/**
 * Platform-wide collections (tenants, credentials) keep every document in this partition, with the
 * owning tenant as a field: they are looked up by id across tenants, and listed per tenant by that field.
 */
export const platformPartition = '*';

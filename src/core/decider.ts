import type { EventMetadata } from './events.js';

/** A domain event as deciders produce it: a past-tense fact with its data, before it gets an envelope. */
export interface DomainEvent<Type extends string = string, Data = unknown> {
  type: Type;
  data: Data;
}

/** What evolve sees: the domain event plus the facts its envelope adds. */
export type Envelope<E extends DomainEvent> = E & { metadata: EventMetadata; streamVersion: number };

/**
 * An aggregate's pure logic. decide never does I/O: time, ids and the actor arrive in the command or in
 * the event metadata.
 */
export interface Decider<State, Command, Event extends DomainEvent> {
  aggregate: string;
  initialState: () => State;
  decide: (command: Command, state: State) => Event[];
  evolve: (state: State, event: Envelope<Event>) => State;
}

/** What a resource folded from its stream records of its first event: when, and at which version. */
export const creationStamps = (event: Envelope<DomainEvent>) => ({
  createdAt: event.metadata.occurredAt,
  updatedAt: event.metadata.occurredAt,
  version: event.streamVersion,
});

/**
 * The resource a creation event describes, before its stamps: its id (the event's `<resource>Id`), its
 * tenant, then the event's other fields.
 */
export const createdFrom = <Data extends object, IdField extends keyof Data & string>(
  event: Envelope<DomainEvent> & { data: Data },
  idField: IdField,
): { id: Data[IdField]; tenantId: string } & Omit<Data, IdField> => {
  const { [idField]: id, ...fields } = event.data;
  return { id, tenantId: event.metadata.tenantId, ...fields };
};

/** What a resource folded from its stream records of each later event. */
export const changeStamps = (event: Envelope<DomainEvent>) => ({
  updatedAt: event.metadata.occurredAt,
  version: event.streamVersion,
});

/** Folds a stream's events into state: the one fold used by command handling, projections and replay. */
export const fold = <State, Event extends DomainEvent>(
  decider: Pick<Decider<State, unknown, Event>, 'initialState' | 'evolve'>,
  events: readonly Envelope<Event>[],
  from: State = decider.initialState(),
): State => events.reduce(decider.evolve, from);

import type { EventStore, WholeStreamReader } from '../eventstore/port.js';
import type { Decider, DomainEvent, Envelope } from './decider.js';
import { fold } from './decider.js';
import { PreconditionFailedError, VersionConflictError } from './errors.js';
import type { NewEvent, NewEventMetadata, RecordedEvent } from './events.js';
import { NO_STREAM } from './events.js';
import { activeTraceparent, inSpan, tracingOn } from './spans.js';

/** Who and what caused a command: becomes the metadata of every event it produces. */
export interface CommandContext {
  tenantId: string;
  actor: string;
  correlationId: string;
  causationId: string | null;
  now: Date;
  newEventId: () => string;
  /**
   * Called right before the command's events are appended; throws when the request may no longer write
   * (a request whose hold on its Idempotency-Key ran out while it stalled, src/http/idempotency.ts).
   */
  beforeWrite?: () => void;
}

export interface CommandResult<State, Event extends DomainEvent> {
  state: State;
  /** The stream version after the command: the resource's ETag. */
  version: number;
  /** Global position of the last event written, or null when the command changed nothing. */
  position: number | null;
  events: Event[];
}

/**
 * The metadata a command's context gives each event it writes, with the traceparent of the span writing it
 * when traces are on (the key is left out otherwise, so untraced events keep their shape). The schema
 * version is the store's to stamp (src/eventstore/upcasting.ts).
 */
export const eventMetadata = (context: CommandContext): NewEventMetadata => {
  const metadata: NewEventMetadata = {
    tenantId: context.tenantId,
    actor: context.actor,
    correlationId: context.correlationId,
    causationId: context.causationId,
    occurredAt: context.now.toISOString(),
  };
  const traceparent = activeTraceparent();
  if (traceparent) metadata.traceparent = traceparent;
  return metadata;
};

/** Trusts the store: the events in an aggregate's stream were written by this aggregate's decider. */
export const toEnvelope = <Event extends DomainEvent>(event: RecordedEvent): Envelope<Event> =>
  ({
    type: event.type,
    data: event.data,
    metadata: event.metadata,
    streamVersion: event.streamVersion,
  }) as Envelope<Event>;

/** A state its holder knows to be the stream's at `version`: what it folded, or what its own append left. */
export interface KnownState<State> {
  state: State;
  version: number;
}

/**
 * Reads the stream, folds it, decides, and appends with the version it read. When the client sent
 * If-Match, a stale version is a 412 before and after deciding; otherwise a race lost is a 409.
 * With traces on, all of it is the span `command <type>`, whose traceparent the appended events carry.
 */
export const handleCommand = <State, Command, Event extends DomainEvent>(
  eventStore: EventStore,
  decider: Decider<State, Command, Event>,
  streamName: string,
  command: Command,
  context: CommandContext,
  ifMatch?: number,
): Promise<CommandResult<State, Event>> =>
  traced(command, streamName, async () => {
    const known = await readAggregate(eventStore, decider, streamName);
    if (ifMatch !== undefined && ifMatch !== known.version) {
      throw new PreconditionFailedError(
        `If-Match names version ${ifMatch}, but the resource is at version ${known.version}`,
      );
    }
    return decideAndAppend(eventStore, decider, streamName, known, command, context, ifMatch);
  });

/**
 * handleCommand without the read, for a caller that holds the stream's state: the command that follows
 * its own append (a webhook attempt's outcome after its claim). If the stream moved since, the append is a
 * VersionConflictError, as a race lost.
 */
export const handleCommandOn = <State, Command, Event extends DomainEvent>(
  eventStore: EventStore,
  decider: Decider<State, Command, Event>,
  streamName: string,
  known: KnownState<State>,
  command: Command,
  context: CommandContext,
): Promise<CommandResult<State, Event>> =>
  traced(command, streamName, () =>
    decideAndAppend(eventStore, decider, streamName, known, command, context),
  );

/**
 * handleCommand for a stream named by an id just drawn, which holds no events yet: decided on the initial
 * state without reading the stream (a read per create costs as much as the decision). The append expects no
 * stream, so should the id exist after all, the conflict sends the command the full way, read and decided
 * on what the stream holds, and the answer is the decider's, as if it had been read first.
 */
export const handleCreate = async <State, Command, Event extends DomainEvent>(
  eventStore: EventStore,
  decider: Decider<State, Command, Event>,
  streamName: string,
  command: Command,
  context: CommandContext,
): Promise<CommandResult<State, Event>> => {
  try {
    return await handleCommandOn(
      eventStore,
      decider,
      streamName,
      { state: decider.initialState(), version: NO_STREAM },
      command,
      context,
    );
  } catch (error) {
    if (!(error instanceof VersionConflictError)) throw error;
    return handleCommand(eventStore, decider, streamName, command, context);
  }
};

/** With traces on, `run` is the span `command <type>`, whose traceparent the appended events carry. */
const traced = <State, Event extends DomainEvent>(
  command: unknown,
  streamName: string,
  run: () => Promise<CommandResult<State, Event>>,
): Promise<CommandResult<State, Event>> => {
  if (!tracingOn()) return run();
  const type = (command as { type?: unknown }).type;
  const name = typeof type === 'string' ? type : 'unnamed';
  return inSpan(
    `command ${name}`,
    { attributes: { 'command.type': name, 'event_store.stream': streamName } },
    async (span) => {
      const result = await run();
      span?.setAttributes({
        'event_store.events_appended': result.events.length,
        'event_store.stream_version': result.version,
        ...(result.position === null ? {} : { 'event_store.position': result.position }),
      });
      return result;
    },
  );
};

const decideAndAppend = async <State, Command, Event extends DomainEvent>(
  eventStore: EventStore,
  decider: Decider<State, Command, Event>,
  streamName: string,
  { state, version }: KnownState<State>,
  command: Command,
  context: CommandContext,
  ifMatch?: number,
): Promise<CommandResult<State, Event>> => {
  const events = decider.decide(command, state);
  if (events.length === 0) return { state, version, position: null, events };

  const toAppend: NewEvent[] = events.map((event) => ({
    id: context.newEventId(),
    type: event.type,
    data: event.data,
    metadata: eventMetadata(context),
  }));
  context.beforeWrite?.();
  try {
    const result = await eventStore.appendToStream(streamName, toAppend, version);
    const written = toAppend.map(
      (event, index) => ({ ...event, streamVersion: version + 1 + index }) as unknown as Envelope<Event>,
    );
    return {
      state: fold(decider, written, state),
      version: result.nextExpectedVersion,
      position: result.lastPosition,
      events,
    };
  } catch (error) {
    if (error instanceof VersionConflictError && ifMatch !== undefined) {
      throw new PreconditionFailedError(
        `The resource changed while the request was handled (version ${error.actual})`,
      );
    }
    throw error;
  }
};

/** An aggregate's current state and version, folded from its stream. */
export const readAggregate = async <State, Event extends DomainEvent>(
  eventStore: WholeStreamReader,
  decider: Pick<Decider<State, never, Event>, 'initialState' | 'evolve'>,
  streamName: string,
): Promise<KnownState<State>> => {
  const recorded = await eventStore.readStream(streamName);
  return {
    state: fold(decider, recorded.map(toEnvelope<Event>)),
    version: recorded.at(-1)?.streamVersion ?? NO_STREAM,
  };
};

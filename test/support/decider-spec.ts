import { expect } from 'chai';
import type { Decider, DomainEvent, Envelope } from '../../src/core/decider.js';
import { fold } from '../../src/core/decider.js';

const metadata = (index: number) => ({
  tenantId: 't_test',
  actor: 'test',
  correlationId: 'c',
  causationId: null,
  occurredAt: new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString(),
  schemaVersion: 1,
});

/** given(events).when(command).then(events) — or .thenThrows(ErrorClass) — for any decider. */
export const deciderSpec =
  <State, Command, Event extends DomainEvent>(decider: Decider<State, Command, Event>) =>
  (given: Event[]) => {
    const state = fold(
      decider,
      given.map((event, index): Envelope<Event> => ({
        ...event,
        metadata: metadata(index),
        streamVersion: index,
      })),
    );
    return {
      when: (command: Command) => ({
        then: (expected: Event[]) => expect(decider.decide(command, state)).to.deep.equal(expected),
        thenThrows: (errorClass: new (...args: never[]) => Error, message?: RegExp) => {
          expect(() => decider.decide(command, state)).to.throw(errorClass, message);
        },
      }),
      state,
    };
  };

import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { externalEventTypes } from '../../src/webhooks/external.js';
import { webhookSchemas } from '../../src/webhooks/openapi.js';

/**
 * The `data` of every event type as docs/webhooks.md lists it, against the schema each delivery is checked
 * against (src/webhooks/openapi.ts; test/integration tests hold real deliveries to it). A member added to
 * an event without its line in the receivers' guide (`mediaAdded` was) fails here.
 */

const guide = readFileSync(new URL('../../docs/webhooks.md', import.meta.url), 'utf8');

/** `{a, b?, c: {d, e}, f: "x"}` → the top-level members, `?` marking an optional one. */
const membersOf = (shape: string): { name: string; optional: boolean }[] => {
  const inner = shape.slice(1, -1);
  const members: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of inner) {
    if (char === '{' || char === '[') depth += 1;
    if (char === '}' || char === ']') depth -= 1;
    if (char === ',' && depth === 0) {
      members.push(current);
      current = '';
    } else current += char;
  }
  members.push(current);
  return members.map((member) => {
    const name = member.split(':')[0]!.trim();
    return { name: name.replace(/\?$/, ''), optional: name.endsWith('?') };
  });
};

/** The guide's table of event types: the type, and the first `{…}` of its `data` cell. */
const documentedData = (): Map<string, string> => {
  const rows = guide.split('\n').filter((line) => /^\| `[a-z.]+` +\| `\{/.test(line));
  return new Map(
    rows.map((row) => {
      const [type, data] = row
        .split('|')
        .slice(1, 3)
        .map((cell) => cell.trim());
      return [type!.replaceAll('`', ''), /^`(\{.*?\})`/.exec(data!)![1]!];
    }),
  );
};

interface ObjectSchema {
  properties: Record<string, unknown>;
  required?: string[];
}

const schemaName = (type: string) =>
  `${type
    .split('.')
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('')}Event`;

describe("docs/webhooks.md's event data", () => {
  const documented = documentedData();

  it('has a row for every event type, and for none other', () => {
    expect([...documented.keys()].sort()).to.deep.equal([...externalEventTypes].sort());
  });

  for (const type of externalEventTypes) {
    it(`lists the members of ${type}'s data as its schema does, optional ones marked with ?`, () => {
      const envelope = webhookSchemas[schemaName(type)] as { properties: { data: ObjectSchema } };
      const data = envelope.properties.data;
      const expected = Object.keys(data.properties)
        .map((name) => ({ name, optional: !(data.required ?? []).includes(name) }))
        .sort((a, b) => a.name.localeCompare(b.name));
      const listed = membersOf(documented.get(type) ?? '{}').sort((a, b) => a.name.localeCompare(b.name));
      expect(listed).to.deep.equal(expected);
    });
  }

  it('reads a shape as a reader does: nested objects are one member', () => {
    expect(membersOf('{a, b?, c: {d, e}, f: "x"}')).to.deep.equal([
      { name: 'a', optional: false },
      { name: 'b', optional: true },
      { name: 'c', optional: false },
      { name: 'f', optional: false },
    ]);
  });
});

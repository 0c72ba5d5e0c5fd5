import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  clientLists,
  clientListsFile,
  clientTypes,
  clientTypesFile,
  serviceDocument,
} from '../../scripts/client-types.js';

const clientSource = fileURLToPath(new URL('../../client/src', import.meta.url));

/** Where two texts part, as a short message: the whole 5,000-line diff would bury it. */
const firstDifference = (committed: string, generated: string): string | undefined => {
  const ours = committed.split('\n');
  const theirs = generated.split('\n');
  const line = ours.findIndex((text, index) => text !== theirs[index]);
  const at = line >= 0 ? line : ours.length < theirs.length ? ours.length : -1;
  if (at < 0) return undefined;
  return `line ${at + 1}: committed ${JSON.stringify(ours[at] ?? '(end of file)')}, generated ${JSON.stringify(theirs[at] ?? '(end of file)')}`;
};

describe('client types generated from the OpenAPI document', () => {
  let generated: string;
  before(async function () {
    this.timeout(60_000);
    generated = await clientTypes();
  });

  it('are committed as the document generates them now', () => {
    const committed = readFileSync(clientTypesFile, 'utf8');
    const difference = firstDifference(committed, generated);
    if (difference !== undefined) {
      expect.fail(
        `client/src/openapi.gen.ts is stale at ${difference}: run \`npm run client:types\` and commit it`,
      );
    }
  });

  it('and the lists the client and the console offer (client/src/lists.gen.ts) too', async () => {
    const committed = readFileSync(clientListsFile, 'utf8');
    const difference = firstDifference(committed, await clientLists());
    if (difference !== undefined) {
      expect.fail(
        `client/src/lists.gen.ts is stale at ${difference}: run \`npm run client:types\` and commit it`,
      );
    }
  });

  it('lists a new event type, so that a list cannot drift from the document', async () => {
    const document = serviceDocument();
    const subscription = document.components.schemas.WebhookSubscription as {
      properties: { events: { items: { enum: string[] } } };
    };
    subscription.properties.events.items.enum.push('location.created');
    expect(await clientLists(document)).to.include("'location.created'");
  });

  it('change when a schema gains a field, so that the check above notices drift', async function () {
    this.timeout(60_000);
    const document = serviceDocument();
    const observation = document.components.schemas.Observation as { properties: Record<string, unknown> };
    observation.properties.habitat = { type: 'string', description: 'Where it was seen' };
    const changed = await clientTypes(document);
    expect(firstDifference(generated, changed)).to.be.a('string');
    expect(changed).to.include('habitat?: string;');
  });

  it('are imported by the client from its own folder only: it never imports server code', () => {
    for (const file of readdirSync(clientSource).filter((name) => name.endsWith('.ts'))) {
      const text = readFileSync(`${clientSource}/${file}`, 'utf8');
      const specifiers = [...text.matchAll(/^\s*(?:import|export)\b[^;]*?from\s+'([^']+)'/gm)].map(
        (match) => match[1]!,
      );
      for (const specifier of specifiers) {
        expect(specifier, `${file} imports ${specifier}`).to.match(/^(\.\/[\w.-]+\.js|node:\w+(\/\w+)?)$/);
      }
    }
  });
});

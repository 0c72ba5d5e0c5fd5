import { expect } from 'chai';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * The recipe of docs/contributing.md ("Add an optional field to a resource"), applied to a copy of the
 * sources: an optional `habitat` on observations. It counts the files the recipe edits by hand, and checks
 * that the field then reaches every schema that shows it to clients (the request bodies, the resource, the
 * webhook events' data) and every example (the resource's, the webhooks' test event), and that an event
 * stored before it existed reads with the field's default. Were a schema written by hand beside the codec,
 * the field would be missing from it and this test would fail.
 */

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The edits of the recipe, as find-and-replace on the copy. Each `find` must occur exactly once. */
const recipe = [
  {
    file: 'src/observations/codecs.ts',
    find: '  notes: absentAs(nullable(plainText(0, 10_000)), null),\n',
    replace:
      '  notes: absentAs(nullable(plainText(0, 10_000)), null),\n' +
      "  habitat: absentAs(described(nullable(plainText(0, 200)), { description: 'Where it was seen' }), null),\n",
  },
  {
    file: 'src/observations/upcasters.ts',
    find: '  ObservationRecorded: { current: 2, upcasters: { 1: observationRecordedV1ToV2 } },',
    replace:
      '  ObservationRecorded: {\n' +
      '    current: 3,\n' +
      '    upcasters: { 1: observationRecordedV1ToV2, 2: (data: unknown) => ({ habitat: null, ...(data as object) }) },\n' +
      '  },',
  },
];

/** What docs/contributing.md says the recipe takes: "Measured by test/unit/add-a-field.test.ts: N files". */
const documentedCount = (): number => {
  const contributing = readFileSync(join(root, 'docs/contributing.md'), 'utf8');
  const match = /Measured by `test\/unit\/add-a-field\.test\.ts`[^:]*: (\w+) (?:hand-edited )?files/.exec(
    contributing,
  );
  if (!match) throw new Error('docs/contributing.md does not state the count of the add-a-field recipe');
  const words = ['zero', 'one', 'two', 'three', 'four', 'five', 'six'];
  return words.includes(match[1]!) ? words.indexOf(match[1]!) : Number(match[1]);
};

const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));

type Schemas = Record<string, { properties: Record<string, unknown>; required?: string[] }>;

describe('adding an optional field to a resource (docs/contributing.md)', function () {
  this.timeout(30_000);
  let copy: string;
  let changed: string[];

  before(() => {
    copy = mkdtempSync(join(tmpdir(), 'add-a-field-'));
    for (const dir of ['src', 'projections']) cpSync(join(root, dir), join(copy, dir), { recursive: true });
    symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'), 'dir');
    writeFileSync(join(copy, 'package.json'), readFileSync(join(root, 'package.json')));
    for (const { file, find, replace } of recipe) {
      const text = readFileSync(join(copy, file), 'utf8');
      expect(text.split(find), `${file} has the text the recipe edits, once`).to.have.length(2);
      writeFileSync(join(copy, file), text.replace(find, replace));
    }
    changed = ['src', 'projections'].flatMap((dir) =>
      filesUnder(join(copy, dir))
        .map((file) => relative(copy, file))
        .filter((file) => readFileSync(join(copy, file), 'utf8') !== readFileSync(join(root, file), 'utf8')),
    );
  });

  after(() => rmSync(copy, { recursive: true, force: true }));

  it('edits by hand as many files as docs/contributing.md says: the codec, and the upcaster', () => {
    expect(changed.sort()).to.deep.equal(['src/observations/codecs.ts', 'src/observations/upcasters.ts']);
    expect(changed).to.have.length(documentedCount());
  });

  it('shows the field in the request bodies, the resource and the webhook event data', async () => {
    const { openApiDocument } = (await import(
      pathToFileURL(join(copy, 'src/openapi/document.ts')).href
    )) as typeof import('../../src/openapi/document.js');
    const schemas = openApiDocument({ publicUrl: 'http://127.0.0.1:3000' }).components
      .schemas as unknown as Schemas;
    const habitat = { type: ['string', 'null'], description: 'Where it was seen', maxLength: 200 };
    const shown = [
      schemas.CreateObservationRequest!,
      schemas.ObservationPatch!,
      schemas.Observation!,
      schemas.ObservationCreatedEvent!.properties.data as Schemas[string],
      (schemas.ObservationUpdatedEvent!.properties.data as Schemas[string]).properties
        .changes as Schemas[string],
    ];
    for (const schema of shown) expect(schema.properties.habitat).to.deep.include(habitat);
    // A resource always has every field: null when it was never set.
    expect(schemas.Observation!.required).to.include('habitat');
  });

  it("shows the field in the examples: the resource, and the webhooks' test event", async () => {
    const { openApiDocument } = (await import(
      pathToFileURL(join(copy, 'src/openapi/document.ts')).href
    )) as typeof import('../../src/openapi/document.js');
    const { exampleEvent } = (await import(
      pathToFileURL(join(copy, 'src/webhooks/examples.ts')).href
    )) as typeof import('../../src/webhooks/examples.js');
    const schemas = openApiDocument({ publicUrl: 'http://127.0.0.1:3000' }).components
      .schemas as unknown as Record<string, { examples: Record<string, unknown>[] }>;
    expect(schemas.Observation!.examples[0]).to.include({ habitat: null });
    const event = exampleEvent('observation.created', 't_1', new Date());
    expect(event.data).to.include({ habitat: null });
  });

  it('records the default when a creation leaves the field out, and reads older events with it', async () => {
    const codecs = (await import(pathToFileURL(join(copy, 'src/observations/codecs.ts')).href)) as {
      recordedFields: (body: { observedAt: string }) => Record<string, unknown>;
    };
    expect(codecs.recordedFields({ observedAt: '2026-05-01T07:30:00.000Z' })).to.include({ habitat: null });
    const { upcaster } = (await import(
      pathToFileURL(join(copy, 'src/core/upcasting.ts')).href
    )) as typeof import('../../src/core/upcasting.js');
    const { observationEventSchemas } = (await import(
      pathToFileURL(join(copy, 'src/observations/upcasters.ts')).href
    )) as typeof import('../../src/observations/upcasters.js');
    const upcast = upcaster(observationEventSchemas);
    // Stored at version 2, before the field existed.
    const stored = {
      type: 'ObservationRecorded',
      data: { observationId: 'o_1', observedAt: '2026-05-01T07:30:00.000Z', notes: null },
      metadata: { schemaVersion: 2 },
    };
    expect(upcast(stored as never)).to.have.nested.property('data.habitat', null);
  });
});

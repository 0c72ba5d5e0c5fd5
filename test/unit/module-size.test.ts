import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const sourceDir = fileURLToPath(new URL('../../src', import.meta.url));

/** The most lines a hand-written module in src/ may have: past it, it holds more than one job. */
const maxLines = 400;

/**
 * Generated modules exempt from the limit, by their path under src/. Each must say at its top that it is
 * generated and by what. None in src/ today: the generated client types live in client/, outside src/.
 */
const generated: readonly string[] = [];

const linesOf = (text: string): number => {
  const lines = text.split('\n');
  return text.endsWith('\n') ? lines.length - 1 : lines.length;
};

const sourceFiles = (): string[] =>
  readdirSync(sourceDir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => file.split('\\').join('/'))
    .sort();

describe('the modules in src/', () => {
  it(`have at most ${maxLines} lines each, unless generated`, () => {
    const tooLong = sourceFiles()
      .filter((file) => !generated.includes(file))
      .map((file) => ({ file, lines: linesOf(readFileSync(join(sourceDir, file), 'utf8')) }))
      .filter(({ lines }) => lines > maxLines)
      .map(({ file, lines }) => `src/${file} (${lines} lines)`);
    expect(tooLong, 'split these along their jobs (issue 25: small modules with one job)').to.deep.equal([]);
  });

  it('exempt only generated files that exist and say so', () => {
    for (const file of generated) {
      const head = readFileSync(join(sourceDir, file), 'utf8').slice(0, 500);
      expect(head, `src/${file}`).to.match(/generated/i);
    }
  });
});

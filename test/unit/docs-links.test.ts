import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The newcomer's path through the docs: docs/README.md lists every page in docs/, and every relative link
 * in README.md and docs/*.md leads to a file that exists and, into a Markdown page, to a heading it has.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
const docsDir = join(root, 'docs');
const pages = [
  join(root, 'README.md'),
  ...readdirSync(docsDir)
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(docsDir, name)),
];

/** The text outside fenced code blocks and code spans, where a `[x](y)` is a link. */
const prose = (markdown: string): string =>
  markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/(`+)[\s\S]*?\1/g, '');

/** The targets of the inline links in a page: `[text](target)`. */
const linksOf = (markdown: string): string[] =>
  [...prose(markdown).matchAll(/\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map(([, target]) => target!);

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens. */
export const slugOf = (heading: string): string =>
  heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');

/** Every anchor a page has: its headings' (a repeated one gets -1, -2, …) and explicit `id`s. */
const anchorsOf = (markdown: string): Set<string> => {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const withoutCode = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const [, heading] of withoutCode.matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = slugOf(heading!);
    const count = seen.get(slug) ?? 0;
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
    seen.set(slug, count + 1);
  }
  for (const [, id] of markdown.matchAll(/<a (?:id|name)="([^"]+)"/g)) anchors.add(id!);
  return anchors;
};

const isExternal = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target);

describe('the docs', () => {
  it('list every page of docs/ in docs/README.md', () => {
    const index = readFileSync(join(docsDir, 'README.md'), 'utf8');
    const listed = new Set(
      linksOf(index)
        .filter((target) => !isExternal(target))
        .map((target) => resolve(docsDir, target.split('#')[0]!)),
    );
    const unlisted = readdirSync(docsDir)
      .filter((name) => name !== 'README.md' && statSync(join(docsDir, name)).isFile())
      .filter((name) => !listed.has(join(docsDir, name)));
    expect(unlisted, 'pages of docs/ that docs/README.md does not link').to.deep.equal([]);
  });

  it('are linked from the README: the index, and operations.md', () => {
    const readme = linksOf(readFileSync(join(root, 'README.md'), 'utf8')).map(
      (target) => target.split('#')[0],
    );
    expect(readme).to.include('docs/README.md');
    expect(readme).to.include('docs/operations.md');
  });

  it('link only to files that exist, and to headings those pages have', () => {
    const broken: string[] = [];
    const anchors = new Map<string, Set<string>>();
    const anchorsIn = (file: string) => {
      if (!anchors.has(file)) anchors.set(file, anchorsOf(readFileSync(file, 'utf8')));
      return anchors.get(file)!;
    };
    for (const page of pages) {
      for (const target of linksOf(readFileSync(page, 'utf8'))) {
        if (isExternal(target)) continue;
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const file = path === '' ? page : resolve(dirname(page), decodeURIComponent(path));
        const where = `${relative(root, page)}: ${target}`;
        if (!existsSync(file)) broken.push(`${where} (no such file)`);
        else if (anchor && file.endsWith('.md') && !anchorsIn(file).has(anchor))
          broken.push(`${where} (no such heading)`);
      }
    }
    expect(broken).to.deep.equal([]);
  });

  it('make anchors as GitHub does, and notice a link to a heading that is not there', () => {
    expect(slugOf('The command line: `obs`')).to.equal('the-command-line-obs');
    expect(slugOf('PATCH: merge semantics')).to.equal('patch-merge-semantics');
    expect(slugOf('Remote models (Open Inference Protocol)')).to.equal(
      'remote-models-open-inference-protocol',
    );
    expect(slugOf('Node.js')).to.equal('nodejs');
    expect(slugOf('1. Download the history')).to.equal('1-download-the-history');
    const page = '# A\n\n## Read-your-writes\n\n```\n## not a heading\n```\n\n## A\n';
    expect([...anchorsOf(page)]).to.deep.equal(['a', 'read-your-writes', 'a-1']);
    expect(linksOf('[x](a.md#b) `[y](c.md)`\n```\n[z](d.md)\n```\n')).to.deep.equal(['a.md#b']);
  });
});

import { expect } from 'chai';
import { readFileSync } from 'node:fs';

/**
 * One Node.js version, said the same way everywhere a newcomer meets it: `.nvmrc` (what `nvm use` picks),
 * the README's Quickstart, the image, and CI; and `engines` accepts it.
 */

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

const nvmrc = read('.nvmrc').trim();
const major = Number(/^v?(\d+)/.exec(nvmrc)?.[1]);

/** Whether some release of a major version is in a range of the forms `engines` uses (`^20.19.0 || >=24`). */
export const admitsMajor = (range: string, version: number): boolean =>
  range.split('||').some((alternative) => {
    const [, operator, wanted] = /^\s*(\^|>=|~)?v?(\d+)/.exec(alternative) ?? [];
    if (wanted === undefined) return false;
    return operator === '>=' ? version >= Number(wanted) : version === Number(wanted);
  });

describe('the Node.js version', () => {
  it('.nvmrc names one major version', () => {
    expect(nvmrc).to.match(/^v?\d+(\.\d+){0,2}$/);
  });

  it('is accepted by engines', () => {
    const { engines } = JSON.parse(read('package.json')) as { engines: { node: string } };
    expect(admitsMajor(engines.node, major), `engines ${engines.node}, .nvmrc ${nvmrc}`).to.equal(true);
  });

  it("is the one the README's Quickstart names, the image's and one CI runs", () => {
    expect(read('README.md')).to.include(`(\`.nvmrc\`: ${nvmrc})`);
    expect(read('Dockerfile')).to.match(new RegExp(`^FROM node:${major}[-.]`, 'm'));
    expect(read('.github/workflows/ci.yml')).to.match(new RegExp(`node-version: \\[[^\\]]*\\b${major}\\b`));
  });

  it('reads an engines range as admitting a major version when some release of it is in range', () => {
    expect(admitsMajor('^20.19.0 || ^22.12.0 || >=24', 20)).to.equal(true);
    expect(admitsMajor('^20.19.0 || ^22.12.0 || >=24', 21)).to.equal(false);
    expect(admitsMajor('^20.19.0 || ^22.12.0 || >=24', 26)).to.equal(true);
  });
});

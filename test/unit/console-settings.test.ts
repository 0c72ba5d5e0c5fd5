import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/config.js';
import { consoleContentSecurityPolicy } from '../../src/console/serve.js';

const base = { DATA_DIR: '/tmp/unused' };

/** The configuration refused at start: a ConfigError whose message includes each of `parts`. */
const refused = (env: Record<string, string>, ...parts: string[]) => {
  const start = () => loadConfig({ ...base, ...env });
  for (const part of parts) expect(start).to.throw(ConfigError, part);
};

describe("the console map's tile settings", () => {
  it('are off by default: no tiles, and the CSP admits images from this origin and blob: only', () => {
    const { console: settings } = loadConfig(base);
    expect(settings.tiles).to.equal(null);
    expect(consoleContentSecurityPolicy(settings)).to.include("img-src 'self' blob:;");
  });

  it('take a tile URL template with its attribution, and the CSP then admits its origin only', () => {
    const { console: settings } = loadConfig({
      ...base,
      CONSOLE_TILE_URL: 'https://{s}.tile.example:8443/osm/{z}/{x}/{y}.png',
      CONSOLE_TILE_ATTRIBUTION: '© OpenStreetMap contributors',
    });
    expect(settings.tiles).to.deep.equal({
      url: 'https://{s}.tile.example:8443/osm/{z}/{x}/{y}.png',
      attribution: '© OpenStreetMap contributors',
    });
    expect(consoleContentSecurityPolicy(settings)).to.include(
      "img-src 'self' blob: https://a.tile.example:8443;",
    );
  });

  for (const [url, reason] of [
    ['ftp://tile.example/{z}/{x}/{y}.png', 'must start with http:// or https://'],
    ['tile.example/{z}/{x}/{y}.png', 'must start with http:// or https://'],
    ['https://tile.example/{z}/{x}.png', 'has no {y}'],
    ['https://tile.example/tiles.png', 'has no {z}, {x}, {y}'],
  ] as const) {
    it(`refuse ${url} at start, saying it ${reason}`, () => {
      refused({ CONSOLE_TILE_URL: url }, `CONSOLE_TILE_URL=${url}`, reason);
    });
  }

  it('refuse an attribution without tiles, which would credit nothing', () => {
    refused({ CONSOLE_TILE_ATTRIBUTION: '© someone' }, 'without CONSOLE_TILE_URL');
  });
});

import { declare, namedSettings } from './declare.js';

/**
 * A raster tile URL template: http or https, with the three places Leaflet fills in. Anything else would
 * only show as a blank map in a browser, so it stops the start instead, saying what is missing.
 */
export const tileUrlTemplate = (text: string): string => {
  if (!/^https?:\/\/[^/]+\//.test(text)) throw new Error('it must start with http:// or https:// and a host');
  const missing = ['{z}', '{x}', '{y}'].filter((part) => !text.includes(part));
  if (missing.length > 0) throw new Error(`it has no ${missing.join(', ')}`);
  // Throws on what is no URL once its places are filled in.
  new URL(text.replaceAll(/\{[a-z]+\}/g, '0'));
  return text;
};

/** The console at /console: its map's optional raster tiles (docs/console.md#the-map). */
export const consoleSettings = namedSettings({
  CONSOLE_TILE_URL: declare({
    default: null,
    defaultShown: 'none: the map draws only its bundled vector basemap, offline',
    expected: 'a tile URL template such as https://tile.example/{z}/{x}/{y}.png',
    description:
      "raster tiles under the console map's vector layers; the console's CSP then admits their origin for images",
    parse: tileUrlTemplate,
  }),
  CONSOLE_TILE_ATTRIBUTION: declare({
    default: null,
    defaultShown: 'none',
    expected: 'a text',
    description:
      'the credit the console map shows for CONSOLE_TILE_URL\'s tiles, such as "© OpenStreetMap contributors"',
    parse: (s) => s,
  }),
});

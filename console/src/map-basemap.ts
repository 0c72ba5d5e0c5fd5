// The map's basemap, offline: Natural Earth's land and borders at 1:50m (world-atlas), fetched once from
// the service as TopoJSON (an asset of its own, cached, rather than 756 kB more script) and drawn on a
// canvas under the data. An operator's raster tiles (CONSOLE_TILE_URL), when set, go under it all.
import type { FeatureCollection, MultiLineString } from 'geojson';
import * as L from 'leaflet';
import { feature, mesh } from 'topojson-client';
import type { GeometryCollection, Topology } from 'topojson-specification';
import { base } from './base.js';

type Countries = Topology<{ countries: GeometryCollection; land: GeometryCollection }>;

interface Basemap {
  land: FeatureCollection | GeoJSON.Feature;
  borders: MultiLineString;
}

const naturalEarth = 'Natural Earth (world-atlas)';

let basemap: Promise<Basemap> | undefined;

/** The land and the borders between countries (each border once), fetched and converted once a page. */
const loadBasemap = (): Promise<Basemap> => {
  basemap ??= fetch(`${base}/console/basemap.json`)
    .then((answer) => {
      if (!answer.ok) throw new Error(`the basemap could not be loaded (HTTP ${answer.status})`);
      return answer.json() as Promise<Countries>;
    })
    .then((topology) => ({
      land: feature(topology, topology.objects.land),
      borders: mesh(topology, topology.objects.countries, (a, b) => a !== b),
    }))
    .catch((error: unknown) => {
      basemap = undefined;
      throw error;
    });
  return basemap;
};

/** The operator's tiles, named by the page's meta tags (no inline script reaches the page). */
export const tileSettings = (): { url: string; attribution: string } | null => {
  const meta = (name: string) => document.querySelector(`meta[name="${name}"]`)?.getAttribute('content');
  const url = meta('obs-tile-url');
  return url ? { url, attribution: meta('obs-tile-attribution') ?? '' } : null;
};

/**
 * Raster tiles as plain images. Leaflet's own TileLayer cancels a tile by pointing it at a data: URL,
 * which the console's CSP refuses (img-src has no data:): a grid of images whose removal only removes them.
 */
const PlainTiles = L.GridLayer.extend({
  initialize(this: L.GridLayer & { template: string }, template: string, options: L.GridLayerOptions) {
    this.template = template;
    L.setOptions(this, options);
  },
  createTile(this: { template: string }, coords: L.Coords, done: L.DoneCallback) {
    const tile = document.createElement('img');
    tile.alt = '';
    tile.setAttribute('role', 'presentation');
    tile.onload = () => done(undefined, tile);
    tile.onerror = () => done(new Error(`tile ${coords.z}/${coords.x}/${coords.y}`), tile);
    // Always the `a` subdomain: the CSP admits the one origin that names (src/console/serve.ts).
    tile.src = L.Util.template(this.template, { s: 'a', r: '', ...coords });
    return tile;
  },
}) as unknown as new (template: string, options: L.GridLayerOptions) => L.GridLayer;

/** Text for Leaflet's attribution, which it writes as HTML. */
const asText = (text: string) => {
  const element = document.createElement('span');
  element.textContent = text;
  return element.innerHTML;
};

/**
 * Adds the basemap to the map: tiles (if any) in Leaflet's tile pane, then land and borders on a canvas
 * in a pane of their own above it. Over tiles the land is not filled, so that the tiles show through.
 */
export const addBasemap = (map: L.Map): void => {
  const tiles = tileSettings();
  if (tiles) new PlainTiles(tiles.url, { attribution: asText(tiles.attribution) }).addTo(map);
  map.createPane('basemap').style.zIndex = '250';
  const renderer = L.canvas({ pane: 'basemap', padding: 0.5 });
  const options = { renderer, interactive: false, attribution: naturalEarth };
  void loadBasemap().then(
    ({ land, borders }) => {
      // The map may have been removed (another screen) while the basemap was on its way.
      if (!map.getContainer().isConnected) return;
      if (!tiles)
        L.geoJSON(land, { ...options, style: { stroke: false, fillColor: '#d8dcd2', fillOpacity: 1 } }).addTo(
          map,
        );
      L.geoJSON(borders, { ...options, style: { color: '#8a9180', weight: 0.8, fill: false } }).addTo(map);
    },
    (error: unknown) => console.warn(error),
  );
};

import type { Locator } from 'playwright-core';

// The console's map as a browser test reads it: its element names its view in data attributes
// (console/src/map.tsx), from which a place's pixel follows, since Leaflet draws in Web Mercator.

export type Bounds = { west: number; south: number; east: number; north: number };

export const boundsOf = async (map: Locator): Promise<Bounds> => {
  const [west = NaN, south = NaN, east = NaN, north = NaN] = (await map.getAttribute('data-bounds'))!
    .split(',')
    .map(Number);
  return { west, south, east, north };
};

export const zoomOf = async (map: Locator) => Number(await map.getAttribute('data-zoom'));

const mercator = (degrees: number) => Math.log(Math.tan(Math.PI / 4 + (degrees * Math.PI) / 360));

/** Where a place is on the screen: between the map's edges, inside its border. */
export const pixelOf = async (map: Locator, lon: number, lat: number) => {
  const { west, south, east, north } = await boundsOf(map);
  const inner = await map.evaluate((element) => {
    const rect = element.getBoundingClientRect();
    return {
      x: rect.x + element.clientLeft,
      y: rect.y + element.clientTop,
      width: element.clientWidth,
      height: element.clientHeight,
    };
  });
  return {
    x: inner.x + ((lon - west) / (east - west)) * inner.width,
    y: inner.y + ((mercator(north) - mercator(lat)) / (mercator(north) - mercator(south))) * inner.height,
  };
};

// Drawing a box on the map: with the "Draw a box" toggle on, or with Shift held, a drag draws a rectangle
// instead of panning, and its corners become the list's bbox filter.
import * as L from 'leaflet';

export type Bbox = [number, number, number, number];

const round = (n: number) => Math.round(n * 1000) / 1000;
const clamp = (n: number, limit: number) => Math.max(-limit, Math.min(limit, n));

/** The box between two corners as `minLon,minLat,maxLon,maxLat`, within the world, to 3 decimals. */
export const bboxOf = (a: L.LatLng, b: L.LatLng): Bbox => [
  round(clamp(Math.min(a.lng, b.lng), 180)),
  round(clamp(Math.min(a.lat, b.lat), 90)),
  round(clamp(Math.max(a.lng, b.lng), 180)),
  round(clamp(Math.max(a.lat, b.lat), 90)),
];

export const boundsOfBbox = ([minLon, minLat, maxLon, maxLat]: Bbox) =>
  L.latLngBounds([minLat, minLon], [maxLat, maxLon]);

/** The rectangle of a box, drawn as the map's other boxes are (map.css, `.map-bbox`). */
export const boxRectangle = (bounds: L.LatLngBounds) =>
  L.rectangle(bounds, { className: 'map-bbox', interactive: false, weight: 2, dashArray: '6 3' });

/** A drag shorter than this many pixels either way is a click, not a box. */
const smallest = 4;

/**
 * Listens for box drags on the map. The pointerdown is taken in the capture phase and its default
 * prevented, so that Leaflet's own drag (which starts on the mouse events that follow it) never starts.
 * Returns the function that stops listening.
 */
export const listenForBoxes = (
  map: L.Map,
  { armed, onBox }: { armed: () => boolean; onBox: (box: Bbox) => void },
): (() => void) => {
  const container = map.getContainer();
  const down = (event: PointerEvent) => {
    if (event.button !== 0 || !(armed() || event.shiftKey)) return;
    if ((event.target as Element).closest('.leaflet-control')) return;
    event.preventDefault();
    event.stopPropagation();
    container.setPointerCapture(event.pointerId);
    const from = map.mouseEventToLatLng(event);
    const start = { x: event.clientX, y: event.clientY };
    const rectangle = boxRectangle(L.latLngBounds(from, from)).addTo(map);
    const move = (next: PointerEvent) =>
      rectangle.setBounds(L.latLngBounds(from, map.mouseEventToLatLng(next)));
    const up = (last: PointerEvent) => {
      container.removeEventListener('pointermove', move);
      container.removeEventListener('pointerup', up);
      rectangle.remove();
      if (Math.abs(last.clientX - start.x) < smallest || Math.abs(last.clientY - start.y) < smallest) return;
      onBox(bboxOf(from, map.mouseEventToLatLng(last)));
    };
    container.addEventListener('pointermove', move);
    container.addEventListener('pointerup', up);
  };
  container.addEventListener('pointerdown', down, true);
  return () => container.removeEventListener('pointerdown', down, true);
};

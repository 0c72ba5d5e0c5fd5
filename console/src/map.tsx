// The map of a screen, with Leaflet: an offline Natural Earth basemap (map-basemap.ts), the points
// clustered (map-clusters.ts), location boundaries as polygons named on hover, and a box drawn on it
// that sets a bbox filter (map-box.ts; the filter form has the same four numbers as fields, for the
// keyboard). The view fits the data, never closer than a region, and zooms and pans as Leaflet does.
import type { Geometry } from 'geojson';
import * as L from 'leaflet';
import 'leaflet/dist/leaflet.css';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { addBasemap, tileSettings } from './map-basemap.js';
import { boundsOfBbox, boxRectangle, listenForBoxes, type Bbox } from './map-box.js';
import { addClusteredPoints, type MapPoint } from './map-clusters.js';
import './map.css';

export type { Bbox } from './map-box.js';
export type { MapPoint } from './map-clusters.js';

export interface MapShape {
  id: string;
  geometry: Geometry;
  /** The name a pointer over the shape shows. */
  label?: string;
}

interface Props {
  label: string;
  points: readonly MapPoint[];
  shapes?: readonly MapShape[];
  bbox?: Bbox | null;
  onBbox?: (bbox: Bbox) => void;
}

/**
 * Fitting the data stops at a zoom that still shows a region around one point: about 600 km across on the
 * bundled 1:50m basemap, closer than which it shows only a coastline's corner; about 100 km with an
 * operator's tiles, which have the detail.
 */
const closestFit = tileSettings() ? 9 : 7;

const newMap = (element: HTMLElement) => {
  const map = L.map(element, {
    boxZoom: false,
    // Half steps: a fit is then closer to the data than whole zoom levels allow.
    zoomSnap: 0.5,
    minZoom: 1,
    maxBounds: [
      [-90, -200],
      [90, 200],
    ],
    maxBoundsViscosity: 0.8,
    worldCopyJump: false,
  });
  map.attributionControl.setPrefix('<a href="https://leafletjs.com">Leaflet</a>');
  map.setView([20, 0], 1);
  addBasemap(map);
  // The view, for whoever reads the page without the map's script objects (the browser tests).
  const describeView = () => {
    const b = map.getBounds();
    element.dataset.bounds = [b.getWest(), b.getSouth(), b.getEast(), b.getNorth()]
      .map((n) => n.toFixed(5))
      .join(',');
    element.dataset.zoom = String(map.getZoom());
  };
  map.on('moveend zoomend', describeView);
  describeView();
  return map;
};

/** The shapes as polygons, each with its name as a tooltip (set as text: a name is not HTML). */
const shapesLayer = (shapes: readonly MapShape[]) =>
  L.featureGroup(
    shapes.map((shape) => {
      const layer = L.geoJSON(shape.geometry, { className: 'map-boundary' } as L.GeoJSONOptions);
      if (shape.label) {
        const name = document.createElement('span');
        name.textContent = shape.label;
        layer.bindTooltip(name, { sticky: true });
      }
      return layer;
    }),
  );

/** What the view should fit: every point and every shape. */
const dataBounds = (points: readonly MapPoint[], shapes: L.FeatureGroup) => {
  const bounds = L.latLngBounds(points.map((p) => [p.lat, p.lon] as L.LatLngTuple));
  if (shapes.getLayers().length > 0) bounds.extend(shapes.getBounds());
  return bounds;
};

/** A key that changes when the data does, since the screens pass new arrays on every render. */
const keyOf = (points: readonly MapPoint[], shapes: readonly MapShape[]) =>
  JSON.stringify([points.map((p) => [p.id, p.lon, p.lat, p.label, p.href]), shapes]);

export const WorldMap = ({ label, points, shapes = [], bbox, onBbox }: Props) => {
  const element = useRef<HTMLDivElement>(null);
  const [map, setMap] = useState<L.Map | null>(null);
  const [armed, setArmed] = useState(false);
  const armedNow = useRef(armed);
  armedNow.current = armed;
  const onBboxNow = useRef(onBbox);
  onBboxNow.current = onBbox;
  const key = keyOf(points, shapes);
  // The key stands for points and shapes: the screens pass new arrays on every render.
  const data = useMemo(() => ({ points, shapes }), [key]);

  useEffect(() => {
    const created = newMap(element.current!);
    element.current!.setAttribute('aria-label', label);
    setMap(created);
    return () => {
      // Listeners first: an animation still running would otherwise call them on a removed map.
      created.off();
      created.remove();
    };
  }, []);

  useEffect(() => {
    if (!map) return;
    const outlines = shapesLayer(data.shapes).addTo(map);
    const removePoints = addClusteredPoints(map, data.points);
    const bounds = dataBounds(data.points, outlines);
    // Not animated: Leaflet drops a new view asked for while it animates the last one.
    if (bounds.isValid()) map.fitBounds(bounds, { padding: [24, 24], maxZoom: closestFit, animate: false });
    return () => {
      removePoints();
      outlines.remove();
    };
  }, [map, data]);

  useEffect(() => {
    if (!map || !onBboxNow.current) return;
    return listenForBoxes(map, {
      armed: () => armedNow.current,
      onBox: (box) => {
        setArmed(false);
        onBboxNow.current?.(box);
      },
    });
  }, [map]);

  const bboxKey = bbox?.join(',');
  useEffect(() => {
    if (!map || !bbox) return;
    const rectangle = boxRectangle(boundsOfBbox(bbox)).addTo(map);
    return () => {
      rectangle.remove();
    };
  }, [map, bboxKey]);

  return (
    // The drawing class is on the figure: Leaflet owns the classes of the map's own element.
    <figure class={armed ? 'map map-drawing' : 'map'}>
      {onBbox ? (
        <div class="map-tools">
          <button type="button" aria-pressed={armed} onClick={() => setArmed(!armed)}>
            {armed ? 'Drawing a box: drag on the map' : 'Draw a box'}
          </button>
        </div>
      ) : null}
      <div ref={element} class="map-view" role="region" />
      <figcaption>
        {points.length} on the map
        {onBbox ? '; draw a box (or Shift and drag) to filter by it' : ''}. Basemap: Natural Earth via
        world-atlas.
      </figcaption>
    </figure>
  );
};

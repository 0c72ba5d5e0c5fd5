// The points of the map, clustered with supercluster: at each zoom, points near each other on the screen
// are one marker showing their count, and activating it zooms in until it comes apart. Every marker is a
// focusable button (Leaflet's keyboard markers), so the keyboard reaches what the mouse does.
import type { Feature, Point } from 'geojson';
import * as L from 'leaflet';
import Supercluster from 'supercluster';

export interface MapPoint {
  id: string;
  lon: number;
  lat: number;
  label: string;
  /** Where activating the point goes (an observation's page), if anywhere. */
  href?: string;
}

type PointProperties = { point: MapPoint };

const clusterIcon = (count: number) =>
  L.divIcon({
    className: 'map-cluster',
    html: `<span>${count}</span>`,
    iconSize: count < 100 ? [32, 32] : [40, 40],
  });

const pointIcon = L.divIcon({ className: 'map-point', iconSize: [14, 14] });

/**
 * A button on the map named `name` (Leaflet gives a div icon only a title) that `activate` runs on a
 * click, or on Enter or Space once focused (Leaflet makes it focusable, and leaves the keys to popups).
 */
const buttonMarker = (
  at: L.LatLngExpression,
  icon: L.DivIcon,
  name: string,
  { activate, above = 0 }: { activate?: () => void; above?: number },
) => {
  const marker = L.marker(at, { icon, title: name, keyboard: true, zIndexOffset: above });
  marker.on('add', () => marker.getElement()?.setAttribute('aria-label', name));
  if (activate) {
    marker.on('click', activate);
    marker.on('keypress', (event) => {
      const key = event.originalEvent.key;
      if (key === 'Enter' || key === ' ') activate();
    });
  }
  return marker;
};

/**
 * A layer of `points` clustered for the map's zoom, redrawn after each move. Returns the function that
 * removes it.
 */
export const addClusteredPoints = (map: L.Map, points: readonly MapPoint[]): (() => void) => {
  const index = new Supercluster<PointProperties>({ radius: 60, maxZoom: 17 });
  index.load(
    points.map((point): Feature<Point, PointProperties> => ({
      type: 'Feature',
      geometry: { type: 'Point', coordinates: [point.lon, point.lat] },
      properties: { point },
    })),
  );
  const layer = L.layerGroup().addTo(map);
  const draw = () => {
    layer.clearLayers();
    const bounds = map.getBounds();
    const box: [number, number, number, number] = [
      Math.max(-180, bounds.getWest()),
      Math.max(-90, bounds.getSouth()),
      Math.min(180, bounds.getEast()),
      Math.min(90, bounds.getNorth()),
    ];
    for (const found of index.getClusters(box, Math.round(map.getZoom()))) {
      const [lon, lat] = found.geometry.coordinates as [number, number];
      if ('cluster' in found.properties && found.properties.cluster) {
        const { cluster_id: id, point_count: count } = found.properties;
        const expand = () => map.setView([lat, lon], Math.min(index.getClusterExpansionZoom(id), 18));
        // Centroids may come close: where clusters overlap, the larger is on top, where a click finds it.
        buttonMarker([lat, lon], clusterIcon(count), `${count} points here: zoom in`, {
          activate: expand,
          above: 10_000 + count,
        }).addTo(layer);
      } else {
        const { point } = found.properties as PointProperties;
        const open = point.href ? () => (window.location.hash = point.href!) : undefined;
        buttonMarker([lat, lon], pointIcon, point.label, { activate: open }).addTo(layer);
      }
    }
  };
  draw();
  map.on('moveend', draw);
  return () => {
    map.off('moveend', draw);
    layer.remove();
  };
};

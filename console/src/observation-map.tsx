// The observation page's map: the region around the point, with the boundary of its location when it has
// one, so that "where" reads at a glance rather than as a dot on the world.
import type { Polygon } from 'geojson';
import { getJson, tenantPath } from './api.js';
import { WorldMap } from './map.js';
import type { Observation } from './observations.js';
import { useLoad } from './ui.js';

interface Location {
  id: string;
  name: string;
  boundary: Polygon | null;
}

export const ObservationMap = ({ observation }: { observation: Observation }) => {
  const { id, position, locationId } = observation;
  // A location that cannot be read (deleted, or not this credential's) leaves the point on its own.
  const location = useLoad(
    () =>
      locationId
        ? getJson<Location>(tenantPath(`/locations/${locationId}`)).catch(() => null)
        : Promise.resolve(null),
    [locationId],
  );
  if (!position) return null;
  const place = location.data;
  return (
    <WorldMap
      label="Where it was observed"
      points={[{ id, lon: position.lon, lat: position.lat, label: `Observation ${id}` }]}
      shapes={place?.boundary ? [{ id: place.id, geometry: place.boundary, label: place.name }] : []}
    />
  );
};

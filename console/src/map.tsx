// The world drawn offline: world-atlas's 110m land outline, bundled, projected with d3-geo. Observations
// and locations are dots, boundaries are outlines, and dragging a box sets a bbox filter (the filter form
// has the same four numbers as fields, for the keyboard).
import { geoEquirectangular, geoPath } from 'd3-geo';
import type { Geometry } from 'geojson';
import { useMemo, useRef, useState } from 'preact/hooks';
import { feature } from 'topojson-client';
import type { GeometryCollection, Topology } from 'topojson-specification';
import land110m from 'world-atlas/land-110m.json';

export const mapWidth = 720;
export const mapHeight = 360;

/** x = (lon + 180) × 2 and y = (90 − lat) × 2 in the map's own units: the tests rely on this. */
const projection = geoEquirectangular()
  .scale(mapWidth / (2 * Math.PI))
  .translate([mapWidth / 2, mapHeight / 2]);
const path = geoPath(projection);

const topology = land110m as unknown as Topology<{ land: GeometryCollection }>;
const landPath = path(feature(topology, topology.objects.land)) ?? '';

export type Bbox = [number, number, number, number];

export interface MapPoint {
  id: string;
  lon: number;
  lat: number;
  label: string;
}

interface Props {
  label: string;
  points: readonly MapPoint[];
  shapes?: readonly { id: string; geometry: Geometry }[];
  bbox?: Bbox | null;
  onBbox?: (bbox: Bbox) => void;
}

const round = (n: number) => Math.round(n * 1000) / 1000;

/** The box between two corners in map units, as `minLon,minLat,maxLon,maxLat`. */
const bboxOf = (a: [number, number], b: [number, number]): Bbox => {
  const [lon1, lat1] = projection.invert!(a)!;
  const [lon2, lat2] = projection.invert!(b)!;
  const clampLon = (n: number) => Math.max(-180, Math.min(180, n));
  const clampLat = (n: number) => Math.max(-90, Math.min(90, n));
  return [
    round(clampLon(Math.min(lon1, lon2))),
    round(clampLat(Math.min(lat1, lat2))),
    round(clampLon(Math.max(lon1, lon2))),
    round(clampLat(Math.max(lat1, lat2))),
  ];
};

export const WorldMap = ({ label, points, shapes = [], bbox, onBbox }: Props) => {
  const svg = useRef<SVGSVGElement>(null);
  const [drag, setDrag] = useState<{ from: [number, number]; to: [number, number] } | null>(null);
  const at = (event: PointerEvent): [number, number] => {
    const rect = svg.current!.getBoundingClientRect();
    return [
      ((event.clientX - rect.left) * mapWidth) / rect.width,
      ((event.clientY - rect.top) * mapHeight) / rect.height,
    ];
  };
  const shapePaths = useMemo(() => shapes.map((s) => ({ id: s.id, d: path(s.geometry) ?? '' })), [shapes]);
  const box = drag
    ? { from: drag.from, to: drag.to }
    : bbox
      ? { from: projection([bbox[0], bbox[3]])!, to: projection([bbox[2], bbox[1]])! }
      : null;

  return (
    <figure class="map">
      <svg
        ref={svg}
        viewBox={`0 0 ${mapWidth} ${mapHeight}`}
        role="img"
        aria-label={label}
        class={onBbox ? 'drawable' : undefined}
        onPointerDown={(event) => {
          if (!onBbox) return;
          svg.current!.setPointerCapture(event.pointerId);
          const p = at(event);
          setDrag({ from: p, to: p });
        }}
        onPointerMove={(event) => drag && setDrag({ ...drag, to: at(event) })}
        onPointerUp={(event) => {
          if (!drag || !onBbox) return;
          const to = at(event);
          setDrag(null);
          if (Math.abs(to[0] - drag.from[0]) > 2 && Math.abs(to[1] - drag.from[1]) > 2)
            onBbox(bboxOf(drag.from, to));
        }}
      >
        <rect class="sea" width={mapWidth} height={mapHeight} />
        <path class="land" d={landPath} />
        {shapePaths.map((s) => (
          <path key={s.id} class="boundary" d={s.d} data-id={s.id} />
        ))}
        {points.map((p) => {
          const [x, y] = projection([p.lon, p.lat])!;
          return (
            <circle key={p.id} class="point" cx={x} cy={y} r={3} data-id={p.id}>
              <title>{p.label}</title>
            </circle>
          );
        })}
        {box ? (
          <rect
            class="bbox"
            x={Math.min(box.from[0], box.to[0])}
            y={Math.min(box.from[1], box.to[1])}
            width={Math.abs(box.to[0] - box.from[0])}
            height={Math.abs(box.to[1] - box.from[1])}
          />
        ) : null}
      </svg>
      <figcaption>
        {points.length} on the map{onBbox ? '; drag a box to filter by it' : ''}. Land outline: Natural Earth
        via world-atlas.
      </figcaption>
    </figure>
  );
};

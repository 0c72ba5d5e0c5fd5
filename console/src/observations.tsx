// The observations: the list's filters and keyset paging, and the map of the page, whose dragged box
// sets the bbox filter.
import { useState } from 'preact/hooks';
import { getJson, query, tenantPath, type Page } from './api.js';
import { WorldMap, type Bbox } from './map.js';
import { Loading, Pager, ProblemBox, Table, When, useLoad } from './ui.js';

export interface Observation {
  id: string;
  observedAt: string;
  position: { lat: number; lon: number; accuracyM?: number } | null;
  locationId: string | null;
  visitId: string | null;
  notes: string | null;
  attributes: Record<string, unknown>;
  media: { id: string; contentType: string; width: number; height: number; size: number; addedAt: string }[];
  createdAt: string;
  updatedAt: string;
  version: number;
}

interface Filters {
  observedFrom: string;
  observedTo: string;
  locationId: string;
  visitId: string;
  bbox: string;
  sort: string;
}

const empty: Filters = {
  observedFrom: '',
  observedTo: '',
  locationId: '',
  visitId: '',
  bbox: '',
  sort: '-observedAt',
};

/** A datetime-local value is the browser's local time: the API wants an instant with its zone. */
const instant = (local: string) => (local ? new Date(local).toISOString() : undefined);

export const ObservationTable = ({ rows }: { rows: readonly Observation[] }) => (
  <Table
    caption="Observations"
    columns={['Observed', 'Notes', 'Position', 'Media']}
    rows={rows}
    row={(o) => (
      <tr key={o.id} data-id={o.id}>
        <td>
          <a href={`#/observations/${o.id}`}>
            <When at={o.observedAt} />
          </a>
        </td>
        <td>{o.notes ?? <span class="muted">no notes</span>}</td>
        <td>{o.position ? `${o.position.lat}, ${o.position.lon}` : '—'}</td>
        <td>{o.media.length}</td>
      </tr>
    )}
  />
);

export const ObservationsScreen = () => {
  const [draft, setDraft] = useState<Filters>(empty);
  const [filters, setFilters] = useState<Filters>(empty);
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const page = useLoad(
    () =>
      getJson<Page<Observation>>(
        tenantPath(
          `/observations${query({
            observedFrom: instant(filters.observedFrom),
            observedTo: instant(filters.observedTo),
            locationId: filters.locationId,
            visitId: filters.visitId,
            bbox: filters.bbox,
            sort: filters.sort,
            limit: 50,
            cursor,
          })}`,
        ),
      ),
    [filters, cursor],
  );
  const apply = (next: Filters) => {
    setDraft(next);
    setFilters(next);
    setCursors([]);
  };
  const field = (name: keyof Filters, label: string, type: 'text' | 'datetime-local' = 'text') => (
    <label>
      {label}
      <input
        // Preact's types tell input types apart (tsc needs this), which the linter's view of them does not.
        // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
        type={type as 'text'}
        name={name}
        value={draft[name]}
        onInput={(event) => setDraft({ ...draft, [name]: (event.target as HTMLInputElement).value })}
      />
    </label>
  );
  const rows = page.data?.data ?? [];
  const bbox = filters.bbox ? (filters.bbox.split(',').map(Number) as Bbox) : null;

  return (
    <>
      <h1>Observations</h1>
      <form
        class="filters"
        aria-label="Filters"
        onSubmit={(event) => {
          event.preventDefault();
          apply(draft);
        }}
      >
        {field('observedFrom', 'Observed from', 'datetime-local')}
        {field('observedTo', 'Observed to', 'datetime-local')}
        {field('locationId', 'Location id')}
        {field('visitId', 'Visit id')}
        {field('bbox', 'Box (minLon,minLat,maxLon,maxLat)')}
        <label>
          Sort
          <select
            name="sort"
            value={draft.sort}
            onChange={(event) => setDraft({ ...draft, sort: (event.target as HTMLSelectElement).value })}
          >
            <option value="-observedAt">Newest observed first</option>
            <option value="observedAt">Oldest observed first</option>
            <option value="-updatedAt">Latest changed first</option>
            <option value="-createdAt">Latest recorded first</option>
          </select>
        </label>
        <div class="buttons">
          <button type="submit">Apply filters</button>
          <button type="button" onClick={() => apply(empty)}>
            Clear
          </button>
        </div>
      </form>
      <WorldMap
        label="Map of the observations on this page"
        points={rows.flatMap((o) =>
          o.position
            ? [
                {
                  id: o.id,
                  lon: o.position.lon,
                  lat: o.position.lat,
                  label: `Observation: ${o.notes ?? o.id}`,
                  href: `#/observations/${o.id}`,
                },
              ]
            : [],
        )}
        bbox={bbox}
        onBbox={(box) => apply({ ...draft, bbox: box.join(',') })}
      />
      <ProblemBox error={page.error} />
      {page.loading && !page.data ? <Loading what="observations" /> : null}
      <p role="status" class="count">
        {page.loading ? 'Loading…' : `${rows.length} observation${rows.length === 1 ? '' : 's'} on this page`}
      </p>
      <ObservationTable rows={rows} />
      <Pager label="Pages" cursors={cursors} setCursors={setCursors} next={page.data?.nextCursor} />
    </>
  );
};

// The observations: the list's filters (places picked by name) and keyset paging, each row saying what was
// seen (main attribute, thumbnail, latest detections) and where (location name, rounded position), and the
// map of the page, whose dragged box sets the bbox filter.
import { useState } from 'preact/hooks';
import { getJson, query, tenantPath, type Page } from './api.js';
import { WorldMap, type Bbox } from './map.js';
import { namesOf, useLocations, useVisits, visitLabel } from './places-data.js';
import { labelsText, mainAttribute, positionText } from './seen-text.js';
import { ScrollBox, Thumbnail } from './thumbnail.js';
import { FilterSelect, Loading, Pager, ProblemBox, Table, When, useLoad } from './ui.js';

export interface Observation {
  id: string;
  observedAt: string;
  position: { lat: number; lon: number; accuracyM?: number } | null;
  locationId: string | null;
  visitId: string | null;
  notes: string | null;
  attributes: Record<string, unknown>;
  media: { id: string; contentType: string; width: number; height: number; size: number; addedAt: string }[];
  /** In lists only: what the latest CV job that found something saw. */
  latestDetections?: {
    jobId: string;
    model: string;
    finishedAt: string;
    labels: { label: string; count: number }[];
  };
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

/** What a row names the observation by: its main attribute, else its notes. */
export const observationTitle = (o: Observation): string =>
  mainAttribute(o.attributes)?.text ?? o.notes ?? 'Observation';

/** A location's name, linked to its page; its id while the names are unknown. */
export const PlaceLink = ({ id, names }: { id: string | null; names: ReadonlyMap<string, string> }) =>
  id ? <a href={`#/locations/${id}`}>{names.get(id) ?? id}</a> : <span class="muted">—</span>;

export const ObservationTable = ({
  rows,
  names,
}: {
  rows: readonly Observation[];
  names: ReadonlyMap<string, string>;
}) => (
  <ScrollBox label="Observations table">
    <Table
      caption="Observations"
      columns={['Image', 'What', 'Observed', 'Location', 'Position', 'Detected']}
      rows={rows}
      row={(o) => {
        const main = mainAttribute(o.attributes);
        return (
          <tr key={o.id} data-id={o.id}>
            <td>
              <Thumbnail observationId={o.id} media={o.media[0]} alt={`Image of ${observationTitle(o)}`} />
            </td>
            <td>
              <a href={`#/observations/${o.id}`} class="observation-what">
                {main ? main.text : (o.notes ?? 'Observation')}
              </a>
              {main && o.notes ? <span class="muted detected">{o.notes}</span> : null}
            </td>
            <td>
              <When at={o.observedAt} />
            </td>
            <td>
              <PlaceLink id={o.locationId} names={names} />
            </td>
            <td class="coordinates">{positionText(o.position)}</td>
            <td class="detections-cell">
              {o.latestDetections ? labelsText(o.latestDetections.labels) : <span class="muted">—</span>}
            </td>
          </tr>
        );
      }}
    />
  </ScrollBox>
);

export const ObservationsScreen = ({ placesToo }: { placesToo: boolean }) => {
  const locations = useLocations(placesToo);
  const visits = useVisits(true);
  const names = namesOf(locations.data?.data ?? []);
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
        {placesToo ? (
          <FilterSelect
            label="Location"
            value={draft.locationId}
            onChange={(locationId) => setDraft({ ...draft, locationId })}
            choices={(locations.data?.data ?? []).map((l) => [l.id, l.name])}
          />
        ) : (
          field('locationId', 'Location id')
        )}
        <FilterSelect
          label="Visit"
          value={draft.visitId}
          onChange={(visitId) => setDraft({ ...draft, visitId })}
          choices={(visits.data?.data ?? []).map((v) => [v.id, visitLabel(v, names)])}
        />
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
            ? [{ id: o.id, lon: o.position.lon, lat: o.position.lat, label: observationTitle(o) }]
            : [],
        )}
        bbox={bbox}
        onBbox={(box) => apply({ ...draft, bbox: box.join(',') })}
      />
      <ProblemBox error={page.error ?? locations.error ?? visits.error} />
      {page.loading && !page.data ? <Loading what="observations" /> : null}
      <p role="status" class="count">
        {page.loading ? 'Loading…' : `${rows.length} observation${rows.length === 1 ? '' : 's'} on this page`}
      </p>
      <ObservationTable rows={rows} names={names} />
      <Pager label="Pages" cursors={cursors} setCursors={setCursors} next={page.data?.nextCursor} />
    </>
  );
};

// Locations on the map with their boundaries, and visits: each with its location, participants and
// observations, and a submit button.
import { useState } from 'preact/hooks';
import { visitStatuses } from '../../client/src/lists.gen.js';
import { getJson, query, sendJson, tenantPath, type Page } from './api.js';
import { WorldMap } from './map.js';
import { ObservationTable, PlaceLink, type Observation } from './observations.js';
import { namesOf, type Location, type Visit } from './places-data.js';
import { positionText } from './seen-text.js';
import { ScrollBox } from './thumbnail.js';
import {
  FilterSelect,
  LoadState,
  Loading,
  ProblemBox,
  Section,
  Table,
  When,
  useAction,
  useLoad,
} from './ui.js';

/** The way back from a location's or a visit's page. */
export const BackToPlaces = () => (
  <p>
    <a href="#/places">Back to the locations and visits</a>
  </p>
);

/** A tenant's visits as a table: when, where (linked), status and who. */
export const VisitTable = ({
  visits,
  names,
}: {
  visits: readonly Visit[];
  names: ReadonlyMap<string, string>;
}) => (
  <ScrollBox label="Visits table">
    <Table
      caption="Visits"
      columns={['Started', 'Location', 'Status', 'Participants']}
      rows={visits}
      row={(v) => (
        <tr key={v.id} data-id={v.id}>
          <td>
            <a href={`#/visits/${v.id}`}>
              <When at={v.startedAt} />
            </a>
          </td>
          <td>
            <PlaceLink id={v.locationId} names={names} />
          </td>
          <td>{v.status}</td>
          <td>{v.participants.join(', ') || '—'}</td>
        </tr>
      )}
    />
  </ScrollBox>
);

export const PlacesScreen = ({ visitsToo }: { visitsToo: boolean }) => {
  const locations = useLoad(() => getJson<Page<Location>>(tenantPath('/locations?limit=200')), []);
  const [status, setStatus] = useState('');
  const visits = useLoad(
    () =>
      visitsToo
        ? getJson<Page<Visit>>(tenantPath(`/visits${query({ status, limit: 100 })}`))
        : Promise.resolve({ data: [], nextCursor: null }),
    [status, visitsToo],
  );
  const rows = locations.data?.data ?? [];
  return (
    <>
      <h1>Locations and visits</h1>
      <Section title="Locations">
        <WorldMap
          label="Map of the locations and their boundaries"
          points={rows.map((l) => ({ id: l.id, lon: l.position.lon, lat: l.position.lat, label: l.name }))}
          shapes={rows.flatMap((l) => (l.boundary ? [{ id: l.id, geometry: l.boundary }] : []))}
        />
        <LoadState loaded={locations} what="locations" />
        <Table
          caption="Locations"
          columns={['Name', 'Id', 'Position', 'Boundary']}
          rows={rows}
          row={(l) => (
            <tr key={l.id} data-id={l.id}>
              <td>
                <a href={`#/locations/${l.id}`}>{l.name}</a>
              </td>
              <td>
                <code>{l.id}</code>
              </td>
              <td class="coordinates">{positionText(l.position)}</td>
              <td>{l.boundary ? `${l.boundary.coordinates[0]?.length ?? 0} points` : '—'}</td>
            </tr>
          )}
        />
      </Section>
      {visitsToo ? (
        <Section title="Visits">
          <FilterSelect
            label="Status"
            value={status}
            onChange={setStatus}
            choices={visitStatuses.map((value) => [value, value[0]!.toUpperCase() + value.slice(1)])}
          />
          <ProblemBox error={visits.error} />
          <VisitTable visits={visits.data?.data ?? []} names={namesOf(rows)} />
        </Section>
      ) : null}
    </>
  );
};

/** The one location a page names, when the credential may read locations; null until then. */
export const useLocation = (id: string | null | undefined, allowed: boolean) =>
  useLoad(
    () => (id && allowed ? getJson<Location>(tenantPath(`/locations/${id}`)) : Promise.resolve(null)),
    [id, allowed],
  );

export const VisitScreen = ({ id, placesToo }: { id: string; placesToo: boolean }) => {
  const visit = useLoad(() => getJson<Visit>(tenantPath(`/visits/${id}`)), [id]);
  const place = useLocation(visit.data?.locationId, placesToo);
  const names = namesOf(place.data ? [place.data] : []);
  const observations = useLoad(
    () => getJson<Page<Observation>>(tenantPath(`/observations${query({ visitId: id, limit: 200 })}`)),
    [id],
  );
  const submit = useAction();
  const v = visit.data;
  if (!v) return visit.error ? <ProblemBox error={visit.error} /> : <Loading what="the visit" />;
  return (
    <>
      <h1>Visit {v.id}</h1>
      <BackToPlaces />
      <dl>
        <dt>Location</dt>
        <dd>
          <PlaceLink id={v.locationId} names={names} />
        </dd>
        <dt>Participants</dt>
        <dd>{v.participants.length > 0 ? v.participants.join(', ') : '—'}</dd>
        <dt>Status</dt>
        <dd>{v.status}</dd>
        <dt>Started</dt>
        <dd>
          <When at={v.startedAt} />
        </dd>
        <dt>Ended</dt>
        <dd>
          <When at={v.endedAt} />
        </dd>
        <dt>Submitted</dt>
        <dd>
          <When at={v.submittedAt} />
        </dd>
        <dt>Notes</dt>
        <dd>{v.notes ?? '—'}</dd>
      </dl>
      {v.status === 'draft' ? (
        <button
          type="button"
          disabled={submit.busy}
          onClick={() =>
            void submit.run(async () => {
              await sendJson('POST', tenantPath(`/visits/${v.id}/submit`));
              visit.reload();
            })
          }
        >
          Submit the visit
        </button>
      ) : null}
      <ProblemBox error={submit.error ?? place.error} />
      <Section title="Its observations">
        <ProblemBox error={observations.error} />
        <ObservationTable rows={observations.data?.data ?? []} names={names} />
      </Section>
    </>
  );
};

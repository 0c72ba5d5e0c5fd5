// Locations on the map with their boundaries, and visits: each with its observations and a submit button.
import type { Polygon } from 'geojson';
import { useState } from 'preact/hooks';
import { visitStatuses } from '../../client/src/lists.gen.js';
import { getJson, query, sendJson, tenantPath, type Page } from './api.js';
import { WorldMap } from './map.js';
import { ObservationTable, type Observation } from './observations.js';
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

interface Location {
  id: string;
  name: string;
  position: { lat: number; lon: number };
  boundary: Polygon | null;
}

interface Visit {
  id: string;
  locationId: string;
  startedAt: string;
  endedAt: string | null;
  participants: string[];
  notes: string | null;
  status: (typeof visitStatuses)[number];
  observationIds: string[];
  submittedAt: string | null;
  version: number;
}

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
          shapes={rows.flatMap((l) =>
            l.boundary ? [{ id: l.id, geometry: l.boundary, label: l.name }] : [],
          )}
        />
        <LoadState loaded={locations} what="locations" />
        <Table
          caption="Locations"
          columns={['Name', 'Id', 'Position', 'Boundary']}
          rows={rows}
          row={(l) => (
            <tr key={l.id}>
              <td>{l.name}</td>
              <td>
                <code>{l.id}</code>
              </td>
              <td>
                {l.position.lat}, {l.position.lon}
              </td>
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
          <Table
            caption="Visits"
            columns={['Started', 'Location', 'Status', 'Participants']}
            rows={visits.data?.data ?? []}
            row={(v) => (
              <tr key={v.id}>
                <td>
                  <a href={`#/visits/${v.id}`}>
                    <When at={v.startedAt} />
                  </a>
                </td>
                <td>{rows.find((l) => l.id === v.locationId)?.name ?? v.locationId}</td>
                <td>{v.status}</td>
                <td>{v.participants.join(', ') || '—'}</td>
              </tr>
            )}
          />
        </Section>
      ) : null}
    </>
  );
};

export const VisitScreen = ({ id }: { id: string }) => {
  const visit = useLoad(() => getJson<Visit>(tenantPath(`/visits/${id}`)), [id]);
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
      <p>
        <a href="#/places">Back to the locations and visits</a>
      </p>
      <dl>
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
      <ProblemBox error={submit.error} />
      <Section title="Its observations">
        <ProblemBox error={observations.error} />
        <ObservationTable rows={observations.data?.data ?? []} />
      </Section>
    </>
  );
};

// One location: its name, position and boundary on the map, and the observations and visits made there.
import { getJson, query, tenantPath, type Page } from './api.js';
import { WorldMap } from './map.js';
import { ObservationTable, type Observation } from './observations.js';
import { namesOf, useVisits } from './places-data.js';
import { BackToPlaces, useLocation, VisitTable } from './places.js';
import { positionText } from './seen-text.js';
import { Loading, ProblemBox, Section, useLoad } from './ui.js';

export const LocationScreen = ({ id, visitsToo }: { id: string; visitsToo: boolean }) => {
  const location = useLocation(id, true);
  const observations = useLoad(
    () =>
      visitsToo
        ? getJson<Page<Observation>>(tenantPath(`/observations${query({ locationId: id, limit: 50 })}`))
        : Promise.resolve({ data: [], nextCursor: null }),
    [id, visitsToo],
  );
  const visits = useVisits(visitsToo, id);
  const l = location.data;
  if (!l) return location.error ? <ProblemBox error={location.error} /> : <Loading what="the location" />;
  const names = namesOf([l]);
  const rows = observations.data?.data ?? [];
  return (
    <>
      <h1>{l.name}</h1>
      <BackToPlaces />
      <dl>
        <dt>Id</dt>
        <dd>
          <code>{l.id}</code>
        </dd>
        <dt>Position</dt>
        <dd class="coordinates">{positionText(l.position)}</dd>
        <dt>Boundary</dt>
        <dd>{l.boundary ? `${l.boundary.coordinates[0]?.length ?? 0} points` : 'none'}</dd>
      </dl>
      <WorldMap
        label={`Map of ${l.name}, its boundary and its observations`}
        points={[
          { id: l.id, lon: l.position.lon, lat: l.position.lat, label: l.name },
          ...rows.flatMap((o) =>
            o.position
              ? [{ id: o.id, lon: o.position.lon, lat: o.position.lat, label: o.notes ?? o.id }]
              : [],
          ),
        ]}
        shapes={l.boundary ? [{ id: l.id, geometry: l.boundary }] : []}
      />
      {visitsToo ? (
        <>
          <Section title="Its observations">
            <ProblemBox error={observations.error} />
            <p class="count">
              {observations.loading
                ? 'Loading…'
                : `${rows.length}${observations.data?.nextCursor ? '+' : ''} observation${rows.length === 1 ? '' : 's'}`}
            </p>
            <ObservationTable rows={rows} names={names} />
            {observations.data?.nextCursor ? (
              <p>
                <a href="#/observations">All observations</a> (filter by this location for the rest)
              </p>
            ) : null}
          </Section>
          <Section title="Its visits">
            <ProblemBox error={visits.error} />
            <VisitTable visits={visits.data?.data ?? []} names={names} />
          </Section>
        </>
      ) : null}
    </>
  );
};

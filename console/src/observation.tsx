// One observation: what was seen (the latest detections per model, the image quality), attributes, notes,
// its location, what changed in each version, and its media with the CV detections drawn on the image (a
// toggle per model) and said in words, and a CV job to run and watch.
import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { call, getJson, query, sendJson, tenantPath, type Page } from './api.js';
import { Boxes } from './boxes.js';
import { huesOf, parametersOf, type CvJob } from './cv.js';
import { WorldMap } from './map.js';
import { useImage } from './media-image.js';
import { observationTitle, PlaceLink, type Observation } from './observations.js';
import { namesOf } from './places-data.js';
import { useLocation } from './places.js';
import { LatestByModel, WhatWasSeen } from './seen.js';
import { attributeText, mainAttribute, positionText, versionChanges } from './seen-text.js';
import { Loading, ProblemBox, Section, When, toggled, useAction, useLoad } from './ui.js';

interface Version {
  version: number;
  event: { type: string; metadata: { actor: string; occurredAt: string } };
  /** The observation as it was after the event. */
  observation: Observation | null;
}

type Media = Observation['media'][number];

/** An image with each shown job's boxes over it, a toggle per model, and what each job saw. */
const MediaItem = ({
  observationId,
  media,
  jobs,
  hues,
}: {
  observationId: string;
  media: Media;
  jobs: CvJob[];
  hues: Map<string, string>;
}) => {
  const url = useImage(tenantPath(`/observations/${observationId}/media/${media.id}`));
  // Toggles only for the models that drew something here (image-quality never does).
  const models = [...new Set(jobs.filter((job) => job.result?.detections.length).map((job) => job.model))];
  const [hidden, setHidden] = useState<string[]>([]);
  const shown = jobs.filter((job) => !hidden.includes(job.model));
  return (
    <article class="media" data-media={media.id}>
      <figure>
        <div class="overlay-frame">
          {url ? (
            <img src={url} alt={`Image ${media.id}`} width={media.width} height={media.height} />
          ) : (
            <Loading what="the image" />
          )}
          <Boxes width={media.width} height={media.height} jobs={shown} hues={hues} />
        </div>
        <figcaption>
          {media.width} × {media.height} {media.contentType}, added <When at={media.addedAt} />
        </figcaption>
      </figure>
      {models.length ? (
        <fieldset>
          <legend>Detections shown</legend>
          {models.map((model) => (
            <label key={model}>
              <input
                type="checkbox"
                checked={!hidden.includes(model)}
                onChange={() => setHidden(toggled(hidden, model))}
              />
              <span class={`swatch ${hues.get(model) ?? 'hue-0'}`} aria-hidden="true" />
              {model}
            </label>
          ))}
        </fieldset>
      ) : null}
      {jobs.length ? (
        <WhatWasSeen jobs={jobs} hues={hues} />
      ) : (
        <p class="muted">No completed CV job on this image yet.</p>
      )}
    </article>
  );
};

const RunJob = ({ observation, onDone }: { observation: Observation; onDone: () => void }) => {
  const models = useLoad(
    () => getJson<Page<{ name: string; description: string }>>(tenantPath('/cv-models')),
    [],
  );
  const [model, setModel] = useState('object-proposals');
  const [chosen, setMediaId] = useState('');
  // The newest image until one is chosen: the observation may have had none when this was first drawn.
  const mediaId = chosen || (observation.media.at(-1)?.id ?? '');
  const [minPercent, setMinPercent] = useState('');
  const [maxDetections, setMaxDetections] = useState('');
  const [job, setJob] = useState<CvJob | null>(null);
  const action = useAction();
  const [pollError, setPollError] = useState<unknown>(null);
  // Watches the job until it ends, then has the page read the completed jobs again.
  useEffect(() => {
    if (!job || job.status === 'completed' || job.status === 'failed') return;
    const timer = setTimeout(() => {
      getJson<CvJob>(tenantPath(`/cv-jobs/${job.id}`)).then((next) => {
        setJob(next);
        if (next.status === 'completed' || next.status === 'failed') onDone();
      }, setPollError);
    }, 300);
    return () => clearTimeout(timer);
  }, [job]);
  if (observation.media.length === 0) return <p class="muted">Upload an image to run a CV model on it.</p>;
  return (
    <form
      class="run-job"
      aria-label="Run a CV job"
      onSubmit={(event) => {
        event.preventDefault();
        const parameters = parametersOf(minPercent, maxDetections);
        void action.run(async () =>
          setJob(
            await sendJson<CvJob>('POST', tenantPath('/cv-jobs'), {
              observationId: observation.id,
              model,
              mediaId,
              ...(parameters ? { parameters } : {}),
            }),
          ),
        );
      }}
    >
      <label>
        Model
        <select value={model} onChange={(event) => setModel((event.target as HTMLSelectElement).value)}>
          {(models.data?.data ?? [{ name: 'object-proposals', description: '' }]).map((m) => (
            <option key={m.name} value={m.name}>
              {m.name}
            </option>
          ))}
        </select>
      </label>
      <label>
        Image
        <select value={mediaId} onChange={(event) => setMediaId((event.target as HTMLSelectElement).value)}>
          {observation.media.map((m) => (
            <option key={m.id} value={m.id}>
              {m.id}
            </option>
          ))}
        </select>
      </label>
      <label>
        Minimum confidence (%)
        <input
          type="number"
          min={0}
          max={100}
          step="any"
          inputMode="decimal"
          value={minPercent}
          aria-describedby="job-defaults"
          onInput={(event) => setMinPercent((event.target as HTMLInputElement).value)}
        />
      </label>
      <label>
        Maximum detections
        <input
          type="number"
          min={1}
          max={1000}
          step={1}
          inputMode="numeric"
          value={maxDetections}
          aria-describedby="job-defaults"
          onInput={(event) => setMaxDetections((event.target as HTMLInputElement).value)}
        />
      </label>
      <p id="job-defaults" class="hint muted">
        Leave these blank for the model's own defaults.
      </p>
      <button type="submit" disabled={action.busy}>
        Run
      </button>
      <ProblemBox error={action.error ?? pollError ?? models.error} />
      {job ? (
        <p role="status" class="job-status" data-job={job.id} data-status={job.status}>
          Job {job.id}: {job.status}
          {job.error ? ` (${job.error.code}: ${job.error.message})` : ''}
        </p>
      ) : null}
    </form>
  );
};

const Upload = ({ observationId, onDone }: { observationId: string; onDone: () => void }) => {
  const action = useAction();
  return (
    <form aria-label="Upload an image" onSubmit={(event) => event.preventDefault()}>
      <label>
        Add an image (JPEG, PNG or WebP)
        <input
          type="file"
          accept="image/jpeg,image/png,image/webp"
          disabled={action.busy}
          onChange={(event) => {
            const file = (event.target as HTMLInputElement).files?.[0];
            if (file)
              void action.run(async () => {
                await call(tenantPath(`/observations/${observationId}/media`), { method: 'POST', raw: file });
                onDone();
              });
          }}
        />
      </label>
      {action.busy ? <Loading what="the upload" /> : null}
      <ProblemBox error={action.error} />
    </form>
  );
};

/** The attributes as a list, each name with its value (nested ones as JSON), or that there are none. */
const Attributes = ({ attributes }: { attributes: Record<string, unknown> }) => {
  const entries = Object.entries(attributes);
  if (entries.length === 0) return <p class="muted">None</p>;
  return (
    <dl class="attributes">
      {entries.map(([name, value]) => (
        <Fragment key={name}>
          <dt>{name}</dt>
          <dd>{attributeText(value)}</dd>
        </Fragment>
      ))}
    </dl>
  );
};

/** Each version with what it changed, newest first: the list reads as what happened lately. */
const History = ({ versions }: { versions: readonly Version[] }) => (
  <ol class="history" reversed>
    {versions
      .map((v, index) => ({
        v,
        changes: v.observation ? versionChanges(versions[index - 1]?.observation ?? null, v.observation) : [],
      }))
      .reverse()
      .map(({ v, changes }) => (
        <li key={v.version} data-version={v.version}>
          <p>
            <strong>Version {v.version}</strong>: {v.event.type} by {v.event.metadata.actor},{' '}
            <When at={v.event.metadata.occurredAt} />
          </p>
          {changes.length > 0 ? (
            <ul class="changes">
              {changes.map((line) => (
                <li key={line}>{line}</li>
              ))}
            </ul>
          ) : null}
        </li>
      ))}
  </ol>
);

export const ObservationScreen = ({ id, cv, placesToo }: { id: string; cv: boolean; placesToo: boolean }) => {
  const observation = useLoad(() => getJson<Observation>(tenantPath(`/observations/${id}`)), [id]);
  const place = useLocation(observation.data?.locationId, placesToo);
  // Read again whenever the observation changes (an upload is a new version).
  const history = useLoad(
    () => getJson<Version[]>(tenantPath(`/observations/${id}/history`)),
    [id, observation.data?.version],
  );
  const jobs = useLoad(
    () =>
      cv
        ? getJson<Page<CvJob>>(
            tenantPath(`/cv-jobs${query({ observationId: id, status: 'completed', limit: 200 })}`),
          )
        : Promise.resolve({ data: [], nextCursor: null }),
    [id, cv],
  );
  const completed = jobs.data?.data ?? [];
  // One colour per model that drew boxes, the same on every image of the page.
  const hues = huesOf(completed.filter((job) => job.result?.detections.length).map((job) => job.model));
  const o = observation.data;
  if (!o)
    return observation.error ? <ProblemBox error={observation.error} /> : <Loading what="the observation" />;
  const main = mainAttribute(o.attributes);
  return (
    <>
      <h1>{main ? `${main.text}: observation ${o.id}` : `Observation ${o.id}`}</h1>
      <p>
        <a href="#/observations">Back to the observations</a>
      </p>
      {cv ? (
        <Section title="What was seen">
          <LatestByModel jobs={completed} />
        </Section>
      ) : null}
      <Section title="Details">
        <dl>
          {main ? (
            <>
              <dt>{main.key[0]!.toUpperCase() + main.key.slice(1)}</dt>
              <dd>{main.text}</dd>
            </>
          ) : null}
          <dt>Observed</dt>
          <dd>
            <When at={o.observedAt} />
          </dd>
          <dt>Notes</dt>
          <dd>{o.notes ?? '—'}</dd>
          <dt>Location</dt>
          <dd>
            <PlaceLink id={o.locationId} names={namesOf(place.data ? [place.data] : [])} />
          </dd>
          <dt>Visit</dt>
          <dd>{o.visitId ? <a href={`#/visits/${o.visitId}`}>{o.visitId}</a> : '—'}</dd>
          <dt>Position</dt>
          <dd class="coordinates">{positionText(o.position)}</dd>
          <dt>Version</dt>
          <dd>{o.version}</dd>
        </dl>
        <ProblemBox error={place.error} />
        <h3>Attributes</h3>
        <Attributes attributes={o.attributes} />
        {o.position ? (
          <WorldMap
            label="Where it was observed"
            points={[{ id: o.id, lon: o.position.lon, lat: o.position.lat, label: observationTitle(o) }]}
            shapes={
              place.data?.boundary
                ? [{ id: place.data.id, geometry: place.data.boundary, label: place.data.name }]
                : []
            }
          />
        ) : null}
      </Section>
      <Section title="Media and detections">
        {o.media.map((media) => (
          <MediaItem
            key={media.id}
            observationId={o.id}
            media={media}
            jobs={completed.filter((job) => job.mediaId === media.id)}
            hues={hues}
          />
        ))}
        <Upload observationId={o.id} onDone={observation.reload} />
        {cv ? <RunJob observation={o} onDone={jobs.reload} /> : null}
        <ProblemBox error={jobs.error} />
      </Section>
      <Section title="History">
        <ProblemBox error={history.error} />
        <History versions={history.data ?? []} />
      </Section>
    </>
  );
};

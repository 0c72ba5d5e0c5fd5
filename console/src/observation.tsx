// One observation: attributes, notes, location, its versions, and its media with the CV detections drawn
// on the image (a toggle per model), and a CV job to run and watch.
import { useEffect, useState } from 'preact/hooks';
import { call, getJson, query, sendJson, tenantPath, type Page } from './api.js';
import { WorldMap } from './map.js';
import type { Observation } from './observations.js';
import { Json, Loading, ProblemBox, Section, When, useAction, useLoad } from './ui.js';

interface Detection {
  label: string;
  confidence: number;
  bbox: { x: number; y: number; width: number; height: number };
}

export interface CvJob {
  id: string;
  mediaId: string;
  model: string;
  status: 'queued' | 'running' | 'completed' | 'failed';
  result: { detections: Detection[]; summary: unknown } | null;
  error: { code: string; message: string } | null;
  createdAt: string;
  finishedAt: string | null;
}

interface Version {
  version: number;
  event: { type: string; metadata: { actor: string; occurredAt: string } };
}

type Media = Observation['media'][number];

/** The image's bytes need the credential, so they come through fetch as a blob: URL (CSP img-src blob:). */
const useImage = (path: string) => {
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    let made: string | null = null;
    call(path).then(
      async (response) => {
        made = URL.createObjectURL(await response.blob());
        setUrl(made);
      },
      () => setUrl(null),
    );
    return () => {
      if (made) URL.revokeObjectURL(made);
    };
  }, [path]);
  return url;
};

/** The image with each shown job's boxes over it, in the image's own pixels (the boxes are 0..1 of it). */
const Detections = ({
  observationId,
  media,
  jobs,
}: {
  observationId: string;
  media: Media;
  jobs: CvJob[];
}) => {
  const url = useImage(tenantPath(`/observations/${observationId}/media/${media.id}`));
  const models = [...new Set(jobs.map((job) => job.model))];
  const [hidden, setHidden] = useState<string[]>([]);
  const shown = jobs.filter((job) => !hidden.includes(job.model));
  return (
    <figure class="media" data-media={media.id}>
      <div class="overlay-frame">
        {url ? (
          <img src={url} alt={`Image ${media.id}`} width={media.width} height={media.height} />
        ) : (
          <Loading what="the image" />
        )}
        <svg
          class="overlay"
          viewBox={`0 0 ${media.width} ${media.height}`}
          preserveAspectRatio="none"
          aria-hidden="true"
        >
          {shown.flatMap((job) =>
            (job.result?.detections ?? []).map((d, i) => (
              <g
                key={`${job.id}-${i}`}
                class={`detection model-${job.model}`}
                data-job={job.id}
                data-index={i}
              >
                <rect
                  x={d.bbox.x * media.width}
                  y={d.bbox.y * media.height}
                  width={d.bbox.width * media.width}
                  height={d.bbox.height * media.height}
                />
                <text x={d.bbox.x * media.width} y={d.bbox.y * media.height} dy="-0.3em">
                  {`${d.label} ${Math.round(d.confidence * 100)}%`}
                </text>
              </g>
            )),
          )}
        </svg>
      </div>
      <figcaption>
        {media.width} × {media.height} {media.contentType}, added <When at={media.addedAt} />
        {models.length ? (
          <fieldset>
            <legend>Detections shown</legend>
            {models.map((model) => (
              <label key={model}>
                <input
                  type="checkbox"
                  checked={!hidden.includes(model)}
                  onChange={() =>
                    setHidden(hidden.includes(model) ? hidden.filter((m) => m !== model) : [...hidden, model])
                  }
                />
                {model}
              </label>
            ))}
          </fieldset>
        ) : (
          <p class="muted">No completed CV job on this image yet.</p>
        )}
        <ul class="detections">
          {shown.flatMap((job) =>
            (job.result?.detections ?? []).map((d, i) => (
              <li key={`${job.id}-${i}`}>
                {job.model}: {d.label}, confidence {d.confidence.toFixed(2)}
              </li>
            )),
          )}
        </ul>
      </figcaption>
    </figure>
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
      aria-label="Run a CV job"
      onSubmit={(event) => {
        event.preventDefault();
        void action.run(async () =>
          setJob(
            await sendJson<CvJob>('POST', tenantPath('/cv-jobs'), {
              observationId: observation.id,
              model,
              mediaId,
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

export const ObservationScreen = ({ id, cv }: { id: string; cv: boolean }) => {
  const observation = useLoad(() => getJson<Observation>(tenantPath(`/observations/${id}`)), [id]);
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
  const o = observation.data;
  if (!o)
    return observation.error ? <ProblemBox error={observation.error} /> : <Loading what="the observation" />;
  return (
    <>
      <h1>Observation {o.id}</h1>
      <p>
        <a href="#/observations">Back to the observations</a>
      </p>
      <Section title="Details">
        <dl>
          <dt>Observed</dt>
          <dd>
            <When at={o.observedAt} />
          </dd>
          <dt>Notes</dt>
          <dd>{o.notes ?? '—'}</dd>
          <dt>Location</dt>
          <dd>{o.locationId ?? '—'}</dd>
          <dt>Visit</dt>
          <dd>{o.visitId ? <a href={`#/visits/${o.visitId}`}>{o.visitId}</a> : '—'}</dd>
          <dt>Position</dt>
          <dd>{o.position ? `${o.position.lat}, ${o.position.lon}` : '—'}</dd>
          <dt>Version</dt>
          <dd>{o.version}</dd>
        </dl>
        <h3>Attributes</h3>
        <Json value={o.attributes} />
        {o.position ? (
          <WorldMap
            label="Where it was observed"
            points={[{ id: o.id, lon: o.position.lon, lat: o.position.lat, label: o.id }]}
          />
        ) : null}
      </Section>
      <Section title="Media and detections">
        {o.media.map((media) => (
          <Detections
            key={media.id}
            observationId={o.id}
            media={media}
            jobs={(jobs.data?.data ?? []).filter((job) => job.mediaId === media.id)}
          />
        ))}
        <Upload observationId={o.id} onDone={observation.reload} />
        {cv ? <RunJob observation={o} onDone={jobs.reload} /> : null}
        <ProblemBox error={jobs.error} />
      </Section>
      <Section title="History">
        <ProblemBox error={history.error} />
        <ol class="history">
          {(history.data ?? []).map((v) => (
            <li key={v.version}>
              Version {v.version}: {v.event.type} by {v.event.metadata.actor},{' '}
              <When at={v.event.metadata.occurredAt} />
            </li>
          ))}
        </ol>
      </Section>
    </>
  );
};

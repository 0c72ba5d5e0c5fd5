// "What was seen" on one image: per completed CV job, the counts by label (or the image-quality verdict),
// the model and its run in words, and every detection as text (the boxes themselves are hidden from
// assistive technology).
import { labelsText } from './seen-text.js';
import { When } from './ui.js';
import './seen.css';
import {
  countsOf,
  percent,
  qualityOf,
  resolutionText,
  runOf,
  verdictText,
  type CvJob,
  type Quality,
} from './cv.js';

const round = (value: number, digits = 1) => Number(value.toFixed(digits)).toString();

/** "none", or "2 % of pixels (0.5 % black, 1.5 % white)". */
const clippingText = ({ total, dark, bright }: NonNullable<Quality['clipping']>) => {
  if (total === 0) return 'none';
  const sides =
    dark === undefined || bright === undefined ? '' : ` (${percent(dark)} black, ${percent(bright)} white)`;
  return `${percent(total)} of pixels${sides}`;
};

const QualityReport = ({ quality }: { quality: Quality }) => (
  <>
    <p class={`verdict ${quality.usable ? 'succeeded' : 'failed'}`}>{verdictText(quality)}</p>
    <dl class="facts">
      {quality.sharpness !== undefined ? (
        <>
          <dt>Sharpness</dt>
          <dd>{round(quality.sharpness)}</dd>
        </>
      ) : null}
      {quality.meanLuminance !== undefined ? (
        <>
          <dt>Mean luminance</dt>
          <dd>{round(quality.meanLuminance, 0)} of 255</dd>
        </>
      ) : null}
      {quality.clipping ? (
        <>
          <dt>Clipping</dt>
          <dd>{clippingText(quality.clipping)}</dd>
        </>
      ) : null}
      {quality.resolution ? (
        <>
          <dt>Resolution</dt>
          <dd>{resolutionText(quality.resolution)}</dd>
        </>
      ) : null}
    </dl>
  </>
);

/** Counts, or what found nothing says it looked for. */
const Found = ({ result }: { result: NonNullable<CvJob['result']> }) => {
  const counts = countsOf(result);
  if (counts.length > 0) return <p class="counts">{labelsText(counts)}</p>;
  const { minConfidence } = runOf(result.summary);
  return (
    <p class="counts muted">
      {minConfidence === undefined ? 'Nothing found' : `Nothing found above ${percent(minConfidence)}`}
    </p>
  );
};

const Run = ({ job }: { job: CvJob }) => {
  const run = runOf(job.result?.summary);
  const parts = [
    [run.modelName, run.modelVersion].filter(Boolean).join(' '),
    run.inferenceMs === undefined ? '' : `${Math.round(run.inferenceMs)} ms`,
    run.minConfidence === undefined ? '' : `confidence ≥ ${percent(run.minConfidence)}`,
    run.maxDetections === undefined ? '' : `up to ${run.maxDetections} detections`,
  ].filter(Boolean);
  return (
    <p class="run muted">
      {parts.length > 0 ? `${parts.join(' · ')} · ` : ''}
      finished <When at={job.finishedAt} />
    </p>
  );
};

export const WhatWasSeen = ({ jobs, hues }: { jobs: CvJob[]; hues: Map<string, string> }) => (
  <section class="seen" aria-label="What was seen">
    <h3>What was seen</h3>
    <ul>
      {jobs.map((job) => {
        const quality = job.result ? qualityOf(job.result.summary) : null;
        const detections = job.result?.detections ?? [];
        return (
          <li key={job.id} class="seen-job" data-job={job.id} data-model={job.model}>
            <h4>
              {hues.has(job.model) ? (
                <span class={`swatch ${hues.get(job.model)}`} aria-hidden="true" />
              ) : null}
              {job.model}
            </h4>
            {quality ? (
              <QualityReport quality={quality} />
            ) : job.result ? (
              <Found result={job.result} />
            ) : null}
            <Run job={job} />
            {detections.length > 0 ? (
              <details>
                <summary>
                  {detections.length === 1 ? '1 detection' : `${detections.length} detections`}
                </summary>
                <ol class="detections">
                  {detections.map((d, i) => (
                    <li key={i}>
                      {d.label}, {percent(d.confidence)}
                    </li>
                  ))}
                </ol>
              </details>
            ) : null}
          </li>
        );
      })}
    </ul>
  </section>
);

/** The newest completed job of each model, by when it finished; models in order of name. */
export const latestByModel = (jobs: readonly CvJob[]): CvJob[] => {
  const latest = new Map<string, CvJob>();
  for (const job of jobs) {
    const known = latest.get(job.model);
    if (!known || (job.finishedAt ?? '') > (known.finishedAt ?? '')) latest.set(job.model, job);
  }
  return [...latest.values()].sort((a, b) => a.model.localeCompare(b.model));
};

/**
 * The observation at a glance: per model, what its latest job saw (labels with counts) or, for the
 * image-quality model, its verdict and measurements.
 */
export const LatestByModel = ({ jobs }: { jobs: readonly CvJob[] }) => {
  const latest = latestByModel(jobs);
  if (latest.length === 0) return <p class="muted">No CV job has completed on this observation yet.</p>;
  return (
    <dl class="latest-by-model">
      {latest.map((job) => {
        const quality = job.result ? qualityOf(job.result.summary) : null;
        const counts = job.result ? countsOf(job.result) : [];
        return (
          <div key={job.model} class="latest-model" data-latest-model={job.model}>
            <dt>{job.model === 'image-quality' || quality ? `Image quality (${job.model})` : job.model}</dt>
            <dd>
              {quality ? (
                <QualityReport quality={quality} />
              ) : counts.length > 0 ? (
                <p class="counts">{labelsText(counts)}</p>
              ) : (
                <p class="counts muted">Nothing found</p>
              )}
              <p class="run muted">
                {job.mediaId}, finished <When at={job.finishedAt} />
              </p>
            </dd>
          </div>
        );
      })}
    </dl>
  );
};

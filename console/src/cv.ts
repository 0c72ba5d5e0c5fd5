import type { cvJobStatuses } from '../../client/src/lists.gen.js';
// What the console reads out of a CV job's result, as plain functions: the counts by label, the model
// and its run, and the image-quality verdict in words. A result's summary is free-form JSON (remote models
// add their own fields), so each reading checks the shape it needs and gives up quietly without it.

export interface Detection {
  label: string;
  confidence: number;
  bbox: { x: number; y: number; width: number; height: number };
}

export interface CvJob {
  id: string;
  mediaId: string;
  model: string;
  status: (typeof cvJobStatuses)[number];
  result: { detections: Detection[]; summary: unknown } | null;
  error: { code: string; message: string } | null;
  createdAt: string;
  finishedAt: string | null;
}

/** The optional `parameters` of a job request; left out of the body when the user set neither. */
export interface JobParameters {
  minConfidence?: number;
  maxDetections?: number;
}

type Fields = Record<string, unknown>;

const isFields = (value: unknown): value is Fields =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const numberAt = (fields: unknown, key: string): number | undefined => {
  const value = isFields(fields) ? fields[key] : undefined;
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
};

const textAt = (fields: unknown, key: string): string | undefined => {
  const value = isFields(fields) ? fields[key] : undefined;
  return typeof value === 'string' && value !== '' ? value : undefined;
};

/** A fraction as a whole percentage with a no-break space: "30 %", "0.5 %" below 1 %. */
export const percent = (fraction: number): string => {
  const value = fraction * 100;
  const shown = value !== 0 && Math.abs(value) < 1 ? Number(value.toPrecision(1)) : Math.round(value);
  return `${shown}\u00a0%`;
};

/** `summary.counts` when the model gives one, else the detections counted by label; most first. */
export const countsOf = (result: NonNullable<CvJob['result']>): { label: string; count: number }[] => {
  const given = isFields(result.summary) ? result.summary.counts : undefined;
  const counts = new Map<string, number>();
  if (isFields(given)) {
    for (const [label, count] of Object.entries(given))
      if (typeof count === 'number' && count > 0) counts.set(label, count);
  } else {
    for (const { label } of result.detections) counts.set(label, (counts.get(label) ?? 0) + 1);
  }
  return [...counts]
    .map(([label, count]) => ({ label, count }))
    .sort((a, b) => b.count - a.count || a.label.localeCompare(b.label));
};

/** What the job's model says of itself and of the run, each part only when given. */
export const runOf = (summary: unknown) => {
  const model = isFields(summary) ? summary.model : undefined;
  const parameters = isFields(summary) ? summary.parameters : undefined;
  return {
    modelName: textAt(model, 'name'),
    modelVersion: textAt(model, 'version'),
    inferenceMs: numberAt(summary, 'inferenceMs'),
    minConfidence: numberAt(parameters, 'minConfidence'),
    maxDetections: numberAt(parameters, 'maxDetections'),
  };
};

export interface Quality {
  usable: boolean;
  reasons: string[];
  sharpness?: number;
  meanLuminance?: number;
  clipping?: { dark?: number; bright?: number; total: number };
  resolution?: { width: number; height: number; megapixels?: number };
}

/** The image-quality summary (`usable` and `reasons`), from whichever model gives one. */
export const qualityOf = (summary: unknown): Quality | null => {
  if (!isFields(summary) || typeof summary.usable !== 'boolean' || !Array.isArray(summary.reasons))
    return null;
  const { clipping, resolution } = summary;
  const total = numberAt(clipping, 'total');
  const width = numberAt(resolution, 'width');
  const height = numberAt(resolution, 'height');
  return {
    usable: summary.usable,
    reasons: summary.reasons.filter((reason): reason is string => typeof reason === 'string'),
    sharpness: numberAt(summary, 'sharpness'),
    meanLuminance: numberAt(summary, 'meanLuminance'),
    clipping:
      total === undefined
        ? undefined
        : { total, dark: numberAt(clipping, 'dark'), bright: numberAt(clipping, 'bright') },
    resolution:
      width === undefined || height === undefined
        ? undefined
        : { width, height, megapixels: numberAt(resolution, 'megapixels') },
  };
};

/** "Usable", or "Not usable: blurry, low resolution". */
export const verdictText = ({ usable, reasons }: Quality): string => {
  if (usable) return 'Usable';
  const words = reasons.map((reason) => reason.replaceAll('_', ' '));
  return words.length > 0 ? `Not usable: ${words.join(', ')}` : 'Not usable';
};

/** "773 × 512, 0.4 MP": two significant digits, so a small image does not read as 0 MP. */
export const resolutionText = ({ width, height, megapixels }: NonNullable<Quality['resolution']>): string =>
  `${width} × ${height}, ${Number((megapixels ?? (width * height) / 1e6).toPrecision(2))} MP`;

/** The colour of each model's boxes: one of the stylesheet's `hue-0` … `hue-5`, in order of name. */
export const huesOf = (models: Iterable<string>): Map<string, string> =>
  new Map([...new Set(models)].sort().map((model, index) => [model, `hue-${index % 6}`]));

/** The form's two optional fields (a percentage, a count) as the request's `parameters`, or none. */
export const parametersOf = (minPercent: string, maxDetections: string): JobParameters | undefined => {
  const parameters: JobParameters = {};
  if (minPercent.trim() !== '') parameters.minConfidence = Number(minPercent) / 100;
  if (maxDetections.trim() !== '') parameters.maxDetections = Number(maxDetections);
  return Object.keys(parameters).length > 0 ? parameters : undefined;
};

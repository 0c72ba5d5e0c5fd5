import * as t from 'io-ts';
import {
  component,
  described,
  numberBetween,
  paramOf,
  oneOf,
  refined,
  ResourceId,
  strictObject,
  wholeNumberParam,
} from '../http/codec.js';
import { pageParams } from '../http/paging.js';
import { cvJobStatuses } from './decider.js';
import { isModelName, modelNamePattern } from './models/port.js';
import { resultLimits } from './models/result.js';

/** The request bodies and query strings of the CV job routes (src/cv/api.ts), described in src/cv/openapi.ts. */

export const ModelName = described(
  refined(
    t.string,
    isModelName,
    'a model name of 1 to 64 lower-case letters, digits, ".", "_" or "-" (see GET .../cv-models)',
    { maxLength: 64, pattern: modelNamePattern.source, not: { pattern: '\\.\\.' } },
  ),
  { description: 'A model name (see GET …/cv-models)', examples: ['image-quality'] },
);

export const DetectionParametersBody = component(
  'DetectionParameters',
  described(
    strictObject(
      'detection parameters',
      {},
      {
        minConfidence: described(numberBetween(0, 1), {
          description: 'Detections less confident than this are left out (objects-coco: 0.3 when not given)',
        }),
        maxDetections: described(
          refined(
            t.number,
            (n) => Number.isInteger(n) && n >= 1 && n <= resultLimits.maxDetections,
            `a whole number between 1 and ${resultLimits.maxDetections}`,
            { type: 'integer', minimum: 1, maximum: resultLimits.maxDetections, format: 'int32' },
          ),
          { description: 'At most this many detections, the most confident first (objects-coco: 100)' },
        ),
      },
    ),
    {
      description:
        "What the job asks of a model that finds objects; left out, the model's defaults (the result's summary.parameters says what it applied). Models that find no objects ignore them.",
    },
  ),
);

export const CreateCvJobBody = strictObject(
  'a CV job',
  { observationId: ResourceId, model: ModelName },
  { mediaId: ResourceId, parameters: DetectionParametersBody },
);

export const ListCvJobsQuery = strictObject(
  'list parameters',
  {},
  {
    ...pageParams,
    minPosition: wholeNumberParam(0, Number.MAX_SAFE_INTEGER),
    observationId: paramOf(ResourceId),
    status: paramOf(oneOf(cvJobStatuses)),
    model: paramOf(ModelName),
  },
);

export const NoParams = strictObject('list parameters', {}, {});

import * as t from 'io-ts';
import {
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
import { isModelName } from './models/port.js';
import { resultLimits } from './models/result.js';

/** The request bodies and query strings of the CV job routes (src/cv/api.ts), described in src/cv/openapi.ts. */

const ModelName = refined(
  t.string,
  isModelName,
  'a model name of 1 to 64 lower-case letters, digits, ".", "_" or "-" (see GET .../cv-models)',
);

export const DetectionParametersBody = strictObject(
  'detection parameters',
  {},
  {
    minConfidence: numberBetween(0, 1),
    maxDetections: refined(
      t.number,
      (n) => Number.isInteger(n) && n >= 1 && n <= resultLimits.maxDetections,
      `a whole number between 1 and ${resultLimits.maxDetections}`,
    ),
  },
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

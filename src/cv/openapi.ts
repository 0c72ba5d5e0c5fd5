import { CreateCvJobBody, DetectionParametersBody, ListCvJobsQuery, ModelName, NoParams } from './codecs.js';
import { cvJobStatuses } from './decider.js';
import { failureCodes } from './models/port.js';
import { exampleIds, fields, page } from '../openapi/components.js';
import { operation, type BuiltOperation } from '../openapi/operation.js';
import {
  arrayOf,
  boolean,
  dateTime,
  enumOf,
  freeObject,
  integer,
  nullable,
  number,
  object,
  ref,
  schemaOf,
  componentSchema,
  string,
  type Schema,
} from '../openapi/schema.js';
import { createdResponse, minPositionQuery, pageResponse, pagingQuery } from '../openapi/resource.js';

/** Computer-vision jobs and the models they run. */

const modelName = schemaOf(ModelName);

const fraction = number(0, 1);

export const cvSchemas: Record<string, Schema> = {
  DetectionParameters: componentSchema(DetectionParametersBody),
  Detection: {
    type: 'object',
    required: ['label', 'confidence', 'bbox'],
    properties: {
      label: string({ minLength: 1, maxLength: 256 }),
      confidence: fraction,
      bbox: object(
        { x: fraction, y: fraction, width: fraction, height: fraction },
        {},
        { description: "Normalized to 0..1 of the image's width and height, from the top-left corner" },
      ),
    },
    additionalProperties: true,
    description: 'One thing a model found; models may add fields of their own',
  },
  ModelResult: object(
    {
      detections: arrayOf(ref('Detection'), { maxItems: 1000 }),
      summary: freeObject('What the model measured about the image as a whole'),
    },
    {},
    { description: "A model's result" },
  ),
  CvJob: object(
    {
      id: fields.id('j'),
      tenantId: fields.tenantId,
      observationId: fields.resourceId,
      mediaId: string({ pattern: '^m_[0-9a-f]{26}$' }),
      sha256: fields.sha256,
      model: modelName,
      status: enumOf(cvJobStatuses),
      attempts: integer(0, undefined, { description: 'More than 1 only after a worker died mid-run' }),
      result: nullable(ref('ModelResult')),
      error: nullable(
        object({ code: enumOf(failureCodes), message: string() }, {}, { description: 'Why the job failed' }),
      ),
      createdAt: dateTime(),
      startedAt: nullable(dateTime()),
      finishedAt: nullable(dateTime()),
      updatedAt: dateTime(),
      version: fields.version,
    },
    {
      parameters: {
        ...ref('DetectionParameters'),
        description: 'As requested; absent on jobs read from a list built before jobs took parameters',
      },
    },
    { description: 'One model run over one image of one observation' },
  ),
  CvModel: object(
    {
      name: modelName,
      kind: enumOf(['builtin', 'remote']),
      description: string(),
      returns: object(
        {
          detections: string({ description: 'What the detections are' }),
          summary: { type: 'object', additionalProperties: string(), description: 'Each summary field' },
        },
        {},
      ),
      available: boolean({
        description: 'Whether it can run here: false when a built-in model’s weights are missing or corrupt',
      }),
    },
    {
      problem: string({ description: 'Why it cannot run (only when available is false)' }),
      classes: arrayOf(string({ maxLength: 256 }), {
        maxItems: 1000,
        description: "The labels its detections may carry, in the model's class order (detectors only)",
        examples: [['person', 'bicycle', 'car']],
      }),
      about: object(
        { version: string(), licence: string(), source: string() },
        {},
        { description: 'What the model is and the terms of its weights' },
      ),
      deprecated: object(
        { replacement: modelName },
        {},
        { description: 'It still runs, but new jobs should use the replacement' },
      ),
    },
    { description: 'A model a CV job may run' },
  ),
};

const base = '/v1/tenants/:tenantId';
const tag = 'CV jobs';

export const cvOperations = (): BuiltOperation[] => [
  operation({
    method: 'post',
    path: `${base}/cv-jobs`,
    operationId: 'createCvJob',
    summary: 'Request a CV job',
    description:
      "Runs the model over one of the observation's images (the last one attached by default). The job is " +
      'only recorded here (202); a worker runs it, and `cv.job.completed` or `cv.job.failed` tells.',
    tag,
    access: { scope: 'cv:write' },
    body: {
      codec: CreateCvJobBody,
      name: 'CreateCvJobRequest',
      example: {
        observationId: exampleIds.observation,
        model: 'objects-coco',
        parameters: { minConfidence: 0.4 },
      },
      mediaTypes: ['application/json'],
      json: true,
    },
    responses: {
      '202': createdResponse('CvJob', 'Queued'),
    },
  }),
  operation({
    method: 'get',
    path: `${base}/cv-jobs`,
    operationId: 'listCvJobs',
    summary: 'List CV jobs',
    tag,
    access: { scope: 'cv:read' },
    query: {
      codec: ListCvJobsQuery,
      parameters: {
        ...pagingQuery.parameters,
        minPosition: minPositionQuery,
        observationId: { description: 'Only jobs of this observation' },
        status: { description: 'Only jobs in this state' },
        model: { description: 'Only jobs of this model' },
      },
    },
    responses: {
      '200': pageResponse('CvJob', 'A page of jobs'),
    },
    problems: ['503'],
  }),
  operation({
    method: 'get',
    path: `${base}/cv-jobs/:id`,
    operationId: 'getCvJob',
    summary: 'Read a CV job',
    description: 'Folded from its stream: always current.',
    tag,
    access: { scope: 'cv:read' },
    pathParameters: { id: { description: "The job's id", example: exampleIds.job } },
    headers: ['IfNoneMatch'],
    responses: {
      '200': { description: 'The job', headers: ['ETag'], content: { 'application/json': ref('CvJob') } },
      '304': { description: 'Not modified', headers: ['ETag'] },
    },
  }),
  operation({
    method: 'get',
    path: `${base}/cv-models`,
    operationId: 'listCvModels',
    summary: 'The models',
    description: 'Built-in models first, then the remote ones configured (CV_MODELS). One page.',
    tag,
    access: { scope: 'cv:read' },
    query: { codec: NoParams, parameters: {} },
    responses: {
      '200': {
        description: 'Every model',
        content: { 'application/json': page(ref('CvModel'), 'Every model') },
      },
    },
  }),
];

import type { Feature } from '../feature.js';
import { routesOnly } from '../feature.js';
import { mediaApi } from './api.js';
import { mediaOperations, mediaSchemas } from './openapi.js';

/** The images attached to observations: uploaded, decoded and stored by their SHA-256. */
export const mediaFeature: Feature = {
  name: 'media',
  projections: [],
  openapi: { operations: mediaOperations, schemas: mediaSchemas },
  wire: routesOnly((context) => [mediaApi(context)]),
};

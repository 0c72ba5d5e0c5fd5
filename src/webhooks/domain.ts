import type { FeatureDomain } from '../feature.js';
import {
  deliveriesProjection,
  deliveryAttemptsProjection,
  webhooksProjection,
} from '../../projections/webhooks.js';
import { webhookEventSchemas } from './upcasters.js';

/**
 * The webhooks feature's read models and event schemas, without its routes and workers, for the
 * stores and the CLI (src/domains.ts).
 */
export const webhooksDomain: FeatureDomain = {
  name: 'webhooks',
  projections: [
    { projection: webhooksProjection, partition: 'tenant' },
    { projection: deliveriesProjection, partition: 'platform' },
    { projection: deliveryAttemptsProjection, partition: 'tenant' },
  ],
  eventSchemas: webhookEventSchemas,
};

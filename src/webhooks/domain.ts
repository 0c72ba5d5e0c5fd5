import type { FeatureDomain } from '../feature.js';
import { perTenant, platformWide } from '../readmodels/registered.js';
import {
  deliveriesProjection,
  deliveryAttemptsProjection,
  webhooksProjection,
} from '../../projections/webhooks.js';
import { webhookHealthProjection } from '../../projections/webhook-health.js';
import { webhookEventSchemas } from './upcasters.js';

/**
 * The webhooks feature's read models and event schemas, without its routes and workers, for the
 * stores and the CLI (src/domains.ts).
 */
export const webhooksDomain: FeatureDomain = {
  name: 'webhooks',
  projections: [
    perTenant(webhooksProjection),
    platformWide(deliveriesProjection),
    perTenant(deliveryAttemptsProjection),
    perTenant(webhookHealthProjection),
  ],
  eventSchemas: webhookEventSchemas,
};

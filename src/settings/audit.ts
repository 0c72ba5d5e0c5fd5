import { validate as cronValidate } from 'node-cron';
import { declare, namedSettings } from './declare.js';

/** Audit: when the digests are appended. */
export const auditSettings = namedSettings({
  AUDIT_DIGEST_SCHEDULE: declare({
    default: '0 * * * *',
    expected: 'a cron expression such as "0 * * * *", or off',
    description:
      "when the per-tenant audit digests are appended (node-cron, the service's time zone); `off`: only by `obs audit digest`",
    parse: (s) => (s === 'off' ? null : cronValidate(s) ? s : undefined),
  }),
});

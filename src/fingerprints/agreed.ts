import type { Config } from '../config.js';
import type { Fingerprint } from './fingerprint.js';

/**
 * Settings that are no secret, but that every process on one store must share all the same: what one
 * process accepts, another acts on, and work accepted under one value fails under the other, in the
 * background, while both answer ready. They are compared as they are, and a process that differs
 * refuses to start as for a secret (check.ts).
 */
interface AgreedSetting {
  name: string;
  value: (config: AgreedConfig) => string;
  /** What goes wrong when two processes differ, for the message. */
  why: string;
  /** Only the processes that serve the API use it (a worker issues and checks no token). */
  apiOnly?: true;
}

type AgreedConfig = Pick<Config, 'tokenAudience' | 'mediaDecode' | 'givenSettings'> & {
  webhooks: Pick<Config['webhooks'], 'allowHttp' | 'allowPrivateNetworks' | 'allowLoopback'>;
};

const undelivered = 'a subscription one accepts is one the other refuses to deliver to';
const unanalysed = 'an image one accepts is one the other refuses to analyse (`media_unreadable`)';

const agreedSettings: readonly AgreedSetting[] = [
  {
    name: 'TOKEN_AUDIENCE',
    value: (config) => config.tokenAudience,
    why: 'each refuses the tokens the other issues (their aud)',
    apiOnly: true,
  },
  { name: 'WEBHOOK_ALLOW_HTTP', value: (config) => String(config.webhooks.allowHttp), why: undelivered },
  {
    name: 'WEBHOOK_ALLOW_PRIVATE_NETWORKS',
    value: (config) => String(config.webhooks.allowPrivateNetworks),
    why: undelivered,
  },
  {
    name: 'WEBHOOK_ALLOW_LOOPBACK',
    value: (config) => String(config.webhooks.allowLoopback),
    why: undelivered,
  },
  { name: 'MEDIA_MAX_PIXELS', value: (config) => String(config.mediaDecode.maxPixels), why: unanalysed },
  {
    name: 'MEDIA_MAX_DECODED_BYTES',
    value: (config) => String(config.mediaDecode.maxDecodedBytes),
    why: unanalysed,
  },
];

/**
 * The agreed settings of a process as fingerprints: the value itself. `servesApi` false leaves out the
 * API's own; `onlyGiven` (for `obs secrets record`) those its environment does not set, whose defaults it
 * must not record over the values the processes run with.
 */
export const agreedFingerprints = (
  config: AgreedConfig,
  { servesApi, onlyGiven = false }: { servesApi: boolean; onlyGiven?: boolean },
): Fingerprint[] =>
  agreedSettings
    .filter((setting) => servesApi || !setting.apiOnly)
    .filter((setting) => !onlyGiven || config.givenSettings.has(setting.name))
    .map((setting) => ({
      name: setting.name,
      values: [setting.value(config)],
      given: config.givenSettings.has(setting.name),
      agreed: { why: setting.why },
    }));

export const agreedSettingNames: readonly string[] = agreedSettings.map((setting) => setting.name);

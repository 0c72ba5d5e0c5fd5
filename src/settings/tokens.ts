import { durationSetting, namedSettings, textSetting } from './declare.js';

/** The tokens the service issues. */
export const tokenSettings = namedSettings({
  TOKEN_AUDIENCE: textSetting('observation-service', 'the `aud` of the access tokens'),
  ACCESS_TOKEN_TTL: durationSetting('15m', 'lifetime of an access token'),
  REFRESH_TOKEN_TTL: durationSetting('30d', 'lifetime of a refresh token'),
});

import { declare, duration, text } from './declare.js';

/** The tokens the service issues. */
export const tokenSettings = {
  TOKEN_AUDIENCE: declare('TOKEN_AUDIENCE')({
    default: 'observation-service',
    expected: 'a text',
    description: 'the `aud` of the access tokens',
    parse: text,
  }),
  ACCESS_TOKEN_TTL: declare('ACCESS_TOKEN_TTL')({
    default: '15m',
    expected: 'a duration such as 15m',
    description: 'lifetime of an access token',
    parse: duration,
  }),
  REFRESH_TOKEN_TTL: declare('REFRESH_TOKEN_TTL')({
    default: '30d',
    expected: 'a duration such as 30d',
    description: 'lifetime of a refresh token',
    parse: duration,
  }),
} as const;

import { parseDuration } from '../core/durations.js';
import {
  choiceSetting,
  declare,
  durationSetting,
  namedSettings,
  tcpPort,
  text,
  url,
  urlForm,
} from './declare.js';

export const roles = ['all', 'api', 'worker'] as const;
export type Role = (typeof roles)[number];
export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The process: its role, its address, its logs and its drain. */
export const processSettings = namedSettings({
  NODE_ENV: declare({
    default: 'development',
    expected: '`production`, or anything else for development',
    description:
      '`production` refuses to start without every secret marked required here, or with a weak one, and generates none',
    parse: text,
  }),
  ROLE: choiceSetting(
    roles,
    'all',
    '`all`: HTTP and the worker duties; `api`: HTTP only; `worker`: projections, webhooks, CV jobs and digests',
  ),
  PORT: declare({
    default: '3000',
    expected: 'a TCP port',
    description: 'HTTP port',
    parse: tcpPort,
  }),
  HOST: declare({
    default: '127.0.0.1',
    expected: 'an address or host name such as 0.0.0.0',
    description: 'address to listen on (`0.0.0.0` in a container)',
    parse: (s) => (/^[^\s/]+$/.test(s) ? s : undefined),
  }),
  PUBLIC_URL: declare({
    default: null,
    defaultShown: '`http://HOST:PORT` (`http://127.0.0.1:3000`; loopback for a wildcard HOST)',
    expected: urlForm(['http', 'https'], 'https://obs.example.com'),
    description:
      'the address clients use: the `iss` of the tokens and the base of the OAuth metadata; the same in every process that serves the API on one store',
    parse: (s) => (url(['http', 'https'])(s) && URL.canParse(s) ? s.replace(/\/+$/, '') : undefined),
  }),
  LOG_LEVEL: choiceSetting(logLevels, 'info', 'the lowest pino level logged'),
  SHUTDOWN_TIMEOUT: durationSetting(
    '10s',
    'drain deadline on SIGTERM/SIGINT for requests, webhook attempts and CV runs in flight',
  ),
  WORKER_LEASE_TTL: declare({
    default: '15s',
    expected: 'a duration of at least 1s such as 15s',
    description:
      'embedded store: how soon a standby process takes the worker duties over from one that went away',
    parse: (s) => ((parseDuration(s) ?? 0) >= 1000 ? parseDuration(s) : undefined),
  }),
  UV_THREADPOOL_SIZE: declare({
    default: '4',
    expected: 'a whole number from 1 to 1024',
    description:
      "threads of libuv's pool, read by Node.js itself at start; image decodes must leave 2 of them to password hashing",
    parse: (s) => (/^[1-9]\d{0,3}$/.test(s) && Number(s) <= 1024 ? Number(s) : undefined),
  }),
});

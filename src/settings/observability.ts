import { declare, tcpPort, oneOf, text, url, urlForm } from './declare.js';

import { metricsModes } from '../observability/metrics-modes.js';

export { metricsModes, type MetricsMode } from '../observability/metrics-modes.js';

/** Observability: metrics and traces. */
export const observabilitySettings = {
  METRICS: declare('METRICS')({
    default: 'platform',
    expected: `one of ${metricsModes.join(', ')}`,
    description:
      '`GET /metrics`: `platform` on the API port to the platform key, `port` open on METRICS_PORT, `off` nowhere',
    parse: oneOf(metricsModes),
  }),
  METRICS_PORT: declare('METRICS_PORT')({
    default: '9464',
    expected: 'a TCP port from 1 to 65535',
    description: 'the port of the metrics listener (on HOST) when METRICS=port',
    parse: (s) => tcpPort(s) || undefined,
  }),
  OTEL_EXPORTER_OTLP_ENDPOINT: declare('OTEL_EXPORTER_OTLP_ENDPOINT')({
    default: null,
    defaultShown: 'none: no traces exported',
    expected: urlForm(['http', 'https'], 'http://collector:4318'),
    description:
      'export traces over OTLP/HTTP there; the SDK reads the other `OTEL_*` variables itself (e.g. `OTEL_EXPORTER_OTLP_HEADERS`)',
    parse: url(['http', 'https']),
  }),
  OTEL_SERVICE_NAME: declare('OTEL_SERVICE_NAME')({
    default: 'observation-service',
    expected: 'a text',
    description: 'the `service.name` of the exported traces',
    parse: text,
  }),
} as const;

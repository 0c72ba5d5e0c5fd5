import { choiceSetting, declare, namedSettings, tcpPort, textSetting, urlSetting } from './declare.js';

import { metricsModes } from '../observability/metrics-modes.js';

export { metricsModes, type MetricsMode } from '../observability/metrics-modes.js';

/** Observability: metrics and traces. */
export const observabilitySettings = namedSettings({
  METRICS: choiceSetting(
    metricsModes,
    'platform',
    '`GET /metrics`: `platform` on the API port to the platform key, `port` open on METRICS_PORT, `off` nowhere',
  ),
  METRICS_PORT: declare({
    default: '9464',
    expected: 'a TCP port from 1 to 65535',
    description: 'the port of the metrics listener (on HOST) when METRICS=port',
    parse: (s) => tcpPort(s) || undefined,
  }),
  OTEL_EXPORTER_OTLP_ENDPOINT: urlSetting(['http', 'https'], 'http://collector:4318', {
    defaultShown: 'none: no traces exported',
    description:
      'export traces over OTLP/HTTP there; the SDK reads the other `OTEL_*` variables itself (e.g. `OTEL_EXPORTER_OTLP_HEADERS`)',
  }),
  OTEL_SERVICE_NAME: textSetting('observation-service', 'the `service.name` of the exported traces'),
});

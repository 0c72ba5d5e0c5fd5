import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { createMetrics } from '../../src/observability/metrics.js';

/**
 * The operator's documents stay true to the registry: docs/operations.md#metrics lists every metric the
 * service registers, and the alerts there and the Grafana dashboard query only metrics that exist.
 */

const operations = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
const dashboard = JSON.parse(
  readFileSync(new URL('../../docs/grafana-dashboard.json', import.meta.url), 'utf8'),
) as {
  title: string;
  templating: { list: { name: string; type: string }[] };
  panels: { type: string; title: string; targets?: { expr: string }[] }[];
};

/** A histogram is queried through its series: `_bucket`, `_count`, `_sum`. */
const metricOf = (series: string) => series.replace(/_(bucket|count|sum)$/, '');

/** Metric names a PromQL expression reads: the identifiers followed by a selector, a range or nothing. */
const metricsIn = (expr: string) =>
  [...expr.matchAll(/\b((?:obs|process|nodejs)_[a-z0-9_]+)\b/g)].map((match) => metricOf(match[1]!));

const section = (title: string) => {
  const start = operations.indexOf(`\n## ${title}\n`);
  expect(start, title).to.be.above(-1);
  const end = operations.indexOf('\n## ', start + 1);
  return operations.slice(start, end === -1 ? undefined : end);
};

describe('the metrics documentation', () => {
  let registered: string[];
  before(async () => {
    registered = (await createMetrics().exposition().getMetricsAsJSON()).map((metric) => metric.name);
  });

  it('lists every metric of the service in the table of docs/operations.md#metrics, and no other', () => {
    const rows = [...section('Metrics').matchAll(/^\| `(obs_[a-z0-9_]+)`/gm)].map((match) => match[1]!);
    const ours = registered.filter((name) => name.startsWith('obs_'));
    expect([...rows].sort()).to.deep.equal([...ours].sort());
  });

  it('sets alerts on lag, parked events, disabled subscriptions and the 5xx rate, over metrics that exist', () => {
    const alerts = section('Alerts');
    const used = metricsIn(alerts);
    for (const wanted of [
      'obs_consumer_lag_seconds',
      'obs_consumer_parked_events',
      'obs_webhook_subscriptions_disabled_total',
      'obs_http_request_duration_seconds',
    ]) {
      expect(used).to.include(wanted);
    }
    expect(alerts).to.include('status_class="5xx"');
    for (const name of used) expect(registered, name).to.include(name);
  });

  it('has a Grafana dashboard, linked from docs/operations.md, whose every query reads metrics that exist', () => {
    expect(section('Dashboard')).to.include('](grafana-dashboard.json)');
    expect(dashboard.templating.list.map((variable) => variable.type)).to.include('datasource');
    const queried = dashboard.panels.filter((panel) => panel.type !== 'row');
    expect(queried.length).to.be.above(10);
    const exprs = queried.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr));
    expect(exprs).to.have.length.above(queried.length - 1);
    const used = exprs.flatMap(metricsIn);
    for (const name of used) expect(registered, name).to.include(name);
    // The lag of every consumer, and the signals the alerts watch, have their panels.
    for (const wanted of [
      'obs_consumer_lag_seconds',
      'obs_consumer_lag_events',
      'obs_consumer_parked_events',
    ]) {
      expect(used).to.include(wanted);
    }
  });
});

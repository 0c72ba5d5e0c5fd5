import { expect } from 'chai';
import { formatTraceparent, parseTraceparent, tracesUrl } from '../../src/observability/tracing.js';

const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
const spanId = '00f067aa0ba902b7';

describe('the W3C traceparent header', () => {
  it('is read as its trace id, parent span id and flags', () => {
    expect(parseTraceparent(`00-${traceId}-${spanId}-01`)).to.deep.equal({ traceId, spanId, traceFlags: 1 });
    expect(parseTraceparent(`00-${traceId}-${spanId}-00`)?.traceFlags).to.equal(0);
  });

  it('of a later version is read by its first four fields, when more follows after a dash', () => {
    expect(parseTraceparent(`01-${traceId}-${spanId}-01-what-comes-later`)?.traceId).to.equal(traceId);
    expect(parseTraceparent(`01-${traceId}-${spanId}-01`)?.traceId).to.equal(traceId);
  });

  for (const [why, header] of [
    ['version ff', `ff-${traceId}-${spanId}-01`],
    ['version 00 with more after the flags', `00-${traceId}-${spanId}-01-more`],
    ['a later version with more not cut at a dash', `01-${traceId}-${spanId}-01more`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${spanId}-01`],
    ['an all-zero parent id', `00-${traceId}-${'0'.repeat(16)}-01`],
    ['upper-case hex', `00-${traceId.toUpperCase()}-${spanId}-01`],
    ['a short trace id', `00-${traceId.slice(1)}-${spanId}-01`],
    ['no flags', `00-${traceId}-${spanId}`],
    ['two headers joined', `00-${traceId}-${spanId}-01, 00-${traceId}-${spanId}-01`],
    ['nothing', ''],
  ] as const) {
    it(`is ignored with ${why}`, () => expect(parseTraceparent(header)).to.equal(null));
  }

  it('is written back as version 00 with two hex digits of flags', () => {
    expect(formatTraceparent({ traceId, spanId, traceFlags: 1 })).to.equal(`00-${traceId}-${spanId}-01`);
    expect(formatTraceparent({ traceId, spanId, traceFlags: 0 })).to.equal(`00-${traceId}-${spanId}-00`);
  });
});

describe('the OTLP endpoint', () => {
  it('takes the traces path after its base URL, with or without a trailing slash', () => {
    expect(tracesUrl('http://collector:4318')).to.equal('http://collector:4318/v1/traces');
    expect(tracesUrl('http://collector:4318/')).to.equal('http://collector:4318/v1/traces');
    expect(tracesUrl('https://otlp.example.com/tenant-a')).to.equal(
      'https://otlp.example.com/tenant-a/v1/traces',
    );
  });
});

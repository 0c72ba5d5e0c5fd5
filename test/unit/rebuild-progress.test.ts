import { expect } from 'chai';
import { csvField, csvRow } from '../../src/readmodels/export.js';
import { estimate, formatDuration, progressReporter } from '../../src/readmodels/progress.js';
import type { BuildProgress } from '../../src/readmodels/rebuild.js';

const progress = (overrides: Partial<BuildProgress> = {}): BuildProgress => ({
  projection: 'observations',
  build: 'observations__b1',
  phase: 'building',
  from: 0,
  checkpoint: 250_000,
  target: 1_000_000,
  events: 250_000,
  elapsedMs: 5_000,
  ...overrides,
});

const fakeStream = (isTTY: boolean) => {
  const written: string[] = [];
  const stream = { isTTY, columns: 120, write: (chunk: string) => written.push(chunk) > 0 };
  return { stream: stream as unknown as NodeJS.WriteStream, written };
};

describe('rebuild progress', () => {
  it('estimates the share done and the time left from the pace so far', () => {
    expect(estimate(progress())).to.deep.equal({ fraction: 0.25, etaMs: 15_000 });
    expect(estimate(progress({ from: 500_000, checkpoint: 750_000 }))).to.deep.equal({
      fraction: 0.5,
      etaMs: 5_000,
    });
    expect(estimate(progress({ checkpoint: 0 })).etaMs).to.equal(null);
    expect(estimate(progress({ from: 10, target: 10, checkpoint: 10 }))).to.deep.equal({
      fraction: 1,
      etaMs: 0,
    });
    expect([formatDuration(15_000), formatDuration(125_000), formatDuration(3_725_000)]).to.deep.equal([
      '15s',
      '2m05s',
      '1h02m',
    ]);
  });

  it('redraws one line with a bar, events/s and an ETA on a terminal', () => {
    const { stream, written } = fakeStream(true);
    const reporter = progressReporter(stream);
    reporter.update(progress());
    reporter.update(progress({ checkpoint: 260_000 })); // within 100 ms: not redrawn
    reporter.update(progress({ phase: 'done', checkpoint: 1_000_000, events: 1_000_000 }));
    reporter.finish();
    expect(written).to.have.length(3);
    // Each redraw returns to the start of the line and clears what is left of the previous one.
    const [first, last, end] = written.map((line) => line.replace(/^\r/, '<CR>').replace('\u001b[K', '<EL>'));
    expect(first).to.equal(
      '<CR>observations [######------------------]  25%  250,000 events  50,000 events/s  ETA 15s<EL>',
    );
    expect(last).to.match(/^<CR>observations \[#{24}\] 100% .* done<EL>$/);
    expect(end).to.equal('\n');
  });

  it('logs plain lines every few seconds and at each change of phase otherwise', () => {
    const { stream, written } = fakeStream(false);
    const reporter = progressReporter(stream, { logEveryMs: 60_000 });
    reporter.update(progress());
    reporter.update(progress({ checkpoint: 500_000 }));
    reporter.update(progress({ phase: 'catching up', checkpoint: 1_000_000 }));
    reporter.update(progress({ phase: 'swapping', checkpoint: 1_000_010 }));
    reporter.finish();
    expect(written).to.deep.equal([
      'observations: 25%, position 250,000/1,000,000, 50,000 events/s, ETA 15s\n',
      'observations: catching up with the head, position 1,000,000/1,000,000, 50,000 events/s\n',
      'observations: swapping in at position 1,000,010\n',
    ]);
  });
});

describe('CSV export fields', () => {
  it('quotes what needs quoting and writes nested values as JSON text', () => {
    expect(csvField('plain')).to.equal('plain');
    expect(csvField('a, b')).to.equal('"a, b"');
    expect(csvField('say "hi"')).to.equal('"say ""hi"""');
    expect(csvField('two\nlines')).to.equal('"two\nlines"');
    expect(csvField(' padded')).to.equal('" padded"');
    expect(csvField(null)).to.equal('');
    expect(csvField(undefined)).to.equal('');
    expect(csvField(4.5)).to.equal('4.5');
    expect(csvField(false)).to.equal('false');
    expect(csvField({ lat: 1, tags: ['a,b'] })).to.equal('"{""lat"":1,""tags"":[""a,b""]}"');
    expect(csvRow(['a', null, [1, 2]])).to.equal('a,,"[1,2]"\r\n');
  });
});

// Mocha's spec output, then the wall time of each tier (the folder under test/ a file is in: they run one
// after the other), then the one summary line CI reads: "N passed, N failed, N skipped".
const Mocha = require('mocha');
const { relative, sep } = require('node:path');

const tierOf = (file) => (file ? relative('test', file).split(sep)[0] : undefined);

class CountingReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const started = Date.now();
    /** Each tier's first and last moment, in the order they ran. */
    const tiers = new Map();
    const seen = (file) => {
      const tier = tierOf(file);
      if (tier === undefined) return;
      const span = tiers.get(tier) ?? { from: Date.now(), to: Date.now() };
      span.to = Date.now();
      tiers.set(tier, span);
    };
    runner.on(Mocha.Runner.constants.EVENT_SUITE_BEGIN, (suite) => seen(suite.file));
    runner.on(Mocha.Runner.constants.EVENT_SUITE_END, (suite) => seen(suite.file));
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const { passes, failures, pending } = runner.stats;
      const seconds = (ms) => `${Math.round(ms / 1000)} s`;
      const spans = [...tiers].map(([tier, { from, to }]) => `${tier} ${seconds(to - from)}`);
      process.stdout.write(`\nwall time: ${spans.join(', ')}; ${seconds(Date.now() - started)} in all\n`);
      process.stdout.write(`\n${passes} passed, ${failures} failed, ${pending} skipped\n`);
    });
  }
}

module.exports = CountingReporter;

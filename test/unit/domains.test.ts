import { expect } from 'chai';
import { domains } from '../../src/domains.js';
import { features } from '../../src/features.js';

/**
 * src/domains.ts lists what the features keep (read models, event schemas) for the stores and the CLI;
 * src/features.ts lists the features. The two lists must name the same things, or a read model would be
 * served but never rebuilt, or a store opened without an event type's upcasters.
 */
describe('the features and their domains', () => {
  it('lists every feature that keeps a read model or an event schema in src/domains.ts, with the same values', () => {
    const keeping = features.filter((feature) => feature.projections.length > 0 || feature.eventSchemas);
    expect(domains.map((domain) => domain.name)).to.have.members(keeping.map((feature) => feature.name));
    for (const feature of keeping) {
      const domain = domains.find((candidate) => candidate.name === feature.name)!;
      expect(feature.projections, feature.name).to.equal(domain.projections);
      expect(feature.eventSchemas, feature.name).to.equal(domain.eventSchemas);
    }
  });
});

import { expect } from 'chai';
import {
  attributeText,
  distanceText,
  labelsText,
  mainAttribute,
  metresBetween,
  positionText,
  versionChanges,
  type Versioned,
} from '../../console/src/seen-text.js';
import { labelCounts } from '../../projections/observations.js';

const version = (overrides: Partial<Versioned> = {}): Versioned => ({
  observedAt: '2026-05-01T09:30:00.000Z',
  position: { lat: 44.23, lon: 7.12 },
  locationId: null,
  visitId: null,
  notes: 'a',
  attributes: { species: 'Vulpes vulpes' },
  media: [],
  ...overrides,
});

describe('what the observation screens say', () => {
  describe('positionText', () => {
    it('rounds to four decimals, never showing floating-point noise', () => {
      expect(positionText({ lat: 44.230000000000004, lon: 7.12 })).to.equal('44.2300, 7.1200');
      expect(positionText({ lat: -0.000049, lon: 179.99999 })).to.equal('0.0000, 180.0000');
    });
    it('says — for no position', () => expect(positionText(null)).to.equal('—'));
  });

  describe('mainAttribute', () => {
    it('takes species first, then taxon, label and name', () => {
      expect(mainAttribute({ name: 'x', species: 'Vulpes' })).to.deep.equal({
        key: 'species',
        text: 'Vulpes',
      });
      expect(mainAttribute({ name: 'Rex', label: 'dog' })).to.deep.equal({ key: 'label', text: 'dog' });
      expect(mainAttribute({ taxon: 1234 })).to.deep.equal({ key: 'taxon', text: '1234' });
    });
    it('skips empty strings and objects, and gives null when nothing names it', () => {
      expect(mainAttribute({ species: '  ', taxon: { id: 1 }, name: 'fox' })).to.deep.equal({
        key: 'name',
        text: 'fox',
      });
      expect(mainAttribute({ count: 2 })).to.equal(null);
    });
    it('takes the keys it is given', () =>
      expect(mainAttribute({ kind: 'moss', species: 'x' }, ['kind'])).to.deep.equal({
        key: 'kind',
        text: 'moss',
      }));
  });

  describe('attributeText', () => {
    it('writes text as it is, and numbers, booleans, null, lists and objects as JSON', () => {
      expect(['Vulpes vulpes', 2, true, null, [1, 2], { sex: 'f' }].map(attributeText)).to.deep.equal([
        'Vulpes vulpes',
        '2',
        'true',
        'null',
        '[1,2]',
        '{"sex":"f"}',
      ]);
    });
  });

  describe('labels', () => {
    it('are counted by label, most first, and said with ×n beyond one', () => {
      const labels = labelCounts([
        { label: 'person' },
        { label: 'horse' },
        { label: 'horse' },
        { label: 'horse' },
      ]);
      expect(labels).to.deep.equal([
        { label: 'horse', count: 3 },
        { label: 'person', count: 1 },
      ]);
      expect(labelsText(labels)).to.equal('horse ×3, person');
    });
  });

  describe('distances', () => {
    it('measures a degree of latitude as about 111 km', () =>
      expect(metresBetween({ lat: 44, lon: 7 }, { lat: 45, lon: 7 })).to.be.closeTo(111_195, 10));
    it('says metres below a kilometre, kilometres above', () => {
      expect(distanceText(12.4)).to.equal('12 m');
      expect(distanceText(1340)).to.equal('1.3 km');
    });
  });

  describe('versionChanges', () => {
    it('says the first version is the recording', () =>
      expect(versionChanges(null, version())).to.deep.equal(['recorded']));

    it('says each changed field, before and after', () => {
      const changes = versionChanges(
        version(),
        version({
          notes: 'b',
          locationId: 'l_1',
          position: { lat: 44.2301, lon: 7.12 },
          attributes: { species: 'Vulpes', count: 2 },
        }),
      );
      expect(changes).to.deep.equal([
        'position moved by 11 m to 44.2301, 7.1200',
        "location set: 'l_1'",
        "notes: 'a' → 'b'",
        'attributes.count added: 2',
        "attributes.species: 'Vulpes vulpes' → 'Vulpes'",
      ]);
    });

    it('says what was cleared or removed, and which image was added', () => {
      const changes = versionChanges(
        version(),
        version({
          notes: null,
          position: null,
          attributes: {},
          media: [{ id: 'm_1', width: 640, height: 480 }],
        }),
      );
      expect(changes).to.deep.equal([
        'position cleared (was 44.2300, 7.1200)',
        "notes cleared (was 'a')",
        "attributes.species removed (was 'Vulpes vulpes')",
        'image m_1 added (640 × 480)',
      ]);
    });

    it('says nothing for a version that changed none of these', () =>
      expect(versionChanges(version(), version())).to.deep.equal([]));
  });
});

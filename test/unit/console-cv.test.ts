import { expect } from 'chai';
import {
  countsOf,
  huesOf,
  parametersOf,
  percent,
  qualityOf,
  resolutionText,
  runOf,
  verdictText,
} from '../../console/src/cv.js';

const box = { x: 0, y: 0, width: 0.1, height: 0.1 };
const seen = (...labels: string[]) => labels.map((label) => ({ label, confidence: 0.5, bbox: box }));

describe("the console's reading of a CV result", () => {
  describe('when the summary has counts', () => {
    it('says them, most first, and does not count the detections again', () => {
      const result = { detections: seen('horse'), summary: { counts: { person: 1, horse: 3, dog: 0 } } };
      expect(countsOf(result)).to.deep.equal([
        { label: 'horse', count: 3 },
        { label: 'person', count: 1 },
      ]);
    });
  });

  describe('when the summary has none', () => {
    it('counts the detections by label', () => {
      const result = { detections: seen('dark-object', 'light-object', 'dark-object'), summary: {} };
      expect(countsOf(result)).to.deep.equal([
        { label: 'dark-object', count: 2 },
        { label: 'light-object', count: 1 },
      ]);
    });
  });

  it('reads the model and its run when given, and nothing from a summary of another shape', () => {
    expect(
      runOf({
        model: { name: 'centernet-mobilenetv3-coco', version: '1' },
        inferenceMs: 150,
        parameters: { minConfidence: 0.3, maxDetections: 100 },
      }),
    ).to.deep.equal({
      modelName: 'centernet-mobilenetv3-coco',
      modelVersion: '1',
      inferenceMs: 150,
      minConfidence: 0.3,
      maxDetections: 100,
    });
    expect(runOf({ model: 'x', parameters: [] })).to.deep.equal({
      modelName: undefined,
      modelVersion: undefined,
      inferenceMs: undefined,
      minConfidence: undefined,
      maxDetections: undefined,
    });
  });

  it('says percentages whole, and a small one with its first digit', () => {
    expect(percent(0.3)).to.equal('30\u00a0%');
    expect(percent(0.004)).to.equal('0.4\u00a0%');
    expect(percent(0)).to.equal('0\u00a0%');
  });

  describe('of image quality', () => {
    const summary = {
      usable: false,
      reasons: ['blurry', 'low_resolution'],
      sharpness: 3.2,
      meanLuminance: 25,
      clipping: { dark: 0, bright: 0, total: 0 },
      resolution: { width: 773, height: 512, megapixels: 0.396 },
    };

    it('gives the verdict and its reasons in words', () => {
      expect(verdictText(qualityOf(summary)!)).to.equal('Not usable: blurry, low resolution');
      expect(verdictText(qualityOf({ ...summary, usable: true, reasons: [] })!)).to.equal('Usable');
    });

    it('gives the resolution with two significant digits of megapixels', () => {
      expect(resolutionText(qualityOf(summary)!.resolution!)).to.equal('773 × 512, 0.4 MP');
      expect(resolutionText({ width: 200, height: 150 })).to.equal('200 × 150, 0.03 MP');
    });

    it('is not read from a summary without a verdict', () => {
      expect(qualityOf({ objects: 2 })).to.equal(null);
    });
  });

  it('gives each model a colour, in order of name, whatever order the jobs came in', () => {
    expect([...huesOf(['b', 'a', 'b', 'c'])]).to.deep.equal([
      ['a', 'hue-0'],
      ['b', 'hue-1'],
      ['c', 'hue-2'],
    ]);
  });

  it('sends parameters only for the fields set, the confidence as a fraction', () => {
    expect(parametersOf('', '')).to.equal(undefined);
    expect(parametersOf('50', '')).to.deep.equal({ minConfidence: 0.5 });
    expect(parametersOf(' ', '10')).to.deep.equal({ maxDetections: 10 });
  });
});

import { expect } from 'chai';
import { centerNetCandidates } from '../../src/cv/detection/centernet.js';
import { cocoLabels } from '../../src/cv/detection/coco-labels.js';
import {
  countByLabel,
  intersectionOverUnion,
  maxCandidates,
  nonMaxSuppression,
  toDetections,
  type Candidate,
} from '../../src/cv/detection/nms.js';

const box = (
  classIndex: number,
  score: number,
  x1: number,
  y1: number,
  x2: number,
  y2: number,
): Candidate => ({
  classIndex,
  score,
  x1,
  y1,
  x2,
  y2,
});
const options = { minConfidence: 0.3, maxDetections: 100, iouThreshold: 0.45 };

describe('detection post-processing', () => {
  it('intersection over union: 1 for the same box, 0 apart, 1/3 for two halves overlapping by half', () => {
    const a = box(0, 1, 0, 0, 10, 10);
    expect(intersectionOverUnion(a, a)).to.equal(1);
    expect(intersectionOverUnion(a, box(0, 1, 20, 20, 30, 30))).to.equal(0);
    expect(intersectionOverUnion(box(0, 1, 0, 0, 10, 10), box(0, 1, 5, 0, 15, 10))).to.be.closeTo(
      1 / 3,
      1e-9,
    );
  });

  it('keeps the best of overlapping boxes of one class, and boxes of other classes where they are', () => {
    const kept = nonMaxSuppression(
      [
        box(17, 0.6, 0, 0, 100, 100),
        box(17, 0.9, 5, 5, 105, 105),
        box(16, 0.5, 5, 5, 105, 105),
        box(17, 0.7, 300, 300, 400, 400),
      ],
      options,
    );
    expect(kept.map((c) => [c.classIndex, c.score])).to.deep.equal([
      [17, 0.9],
      [17, 0.7],
      [16, 0.5],
    ]);
  });

  it('drops boxes below the threshold and with no area, and keeps at most maxDetections', () => {
    const kept = nonMaxSuppression(
      [
        box(1, 0.2, 0, 0, 10, 10),
        box(1, 0.9, 5, 5, 5, 50),
        ...Array.from({ length: 10 }, (_, i) => box(2, 0.5, i * 20, 0, i * 20 + 10, 10)),
      ],
      { ...options, maxDetections: 4 },
    );
    expect(kept).to.have.length(4);
    expect(kept.every((c) => c.classIndex === 2)).to.equal(true);
  });

  it('stays quick on 100,000 overlapping candidates above the threshold (at most 3000 are compared)', () => {
    const many = Array.from({ length: 100_000 }, (_, i) =>
      box(i % 3, 0.5 + (i % 1000) / 2000, i % 97, i % 89, (i % 97) + 50, (i % 89) + 50),
    );
    const started = performance.now();
    const kept = nonMaxSuppression(many, { ...options, maxDetections: 1000 });
    expect(performance.now() - started).to.be.below(5000);
    expect(kept.length).to.be.within(1, maxCandidates);
  });

  it('turns kept boxes into detections relative to the image, clipped to it, with their COCO labels', () => {
    const [horse, off] = toDetections([box(17, 0.6712, 100, 50, 300, 250), box(0, 0.4, -20, 480, 100, 530)], {
      width: 400,
      height: 500,
      labels: cocoLabels,
    });
    expect(horse).to.deep.equal({
      label: 'horse',
      confidence: 0.671,
      bbox: { x: 0.25, y: 0.1, width: 0.5, height: 0.4 },
    });
    expect(off).to.deep.equal({
      label: 'person',
      confidence: 0.4,
      bbox: { x: 0, y: 0.96, width: 0.25, height: 0.04 },
    });
    expect(countByLabel([horse!, off!, horse!])).to.deep.equal({ horse: 2, person: 1 });
  });

  it('reads CenterNet’s rows of six numbers, skipping rows that are not numbers', () => {
    const rows = new Float32Array([
      10,
      20,
      110,
      220,
      0.75,
      17,
      NaN,
      NaN,
      NaN,
      NaN,
      NaN,
      NaN,
      0,
      0,
      5,
      5,
      0.1,
      0,
    ]);
    expect(centerNetCandidates(rows)).to.deep.equal([
      { classIndex: 17, score: 0.75, x1: 10, y1: 20, x2: 110, y2: 220 },
      { classIndex: 0, score: Math.fround(0.1), x1: 0, y1: 0, x2: 5, y2: 5 },
    ]);
  });

  it('keeps one class of each box CenterNet gives, the best, as it is one object under several classes', () => {
    const row = (score: number, classIndex: number, x1 = 10) => [x1, 20, 110, 220, score, classIndex];
    // A horse seen as a sheep, a horse and a cow, in any order; another horse beside it.
    const rows = new Float32Array([
      ...row(0.25, 19),
      ...row(0.5, 17),
      ...row(0.375, 18),
      ...row(0.5, 17, 11),
    ]);
    expect(centerNetCandidates(rows)).to.deep.equal([
      { classIndex: 17, score: 0.5, x1: 10, y1: 20, x2: 110, y2: 220 },
      { classIndex: 17, score: 0.5, x1: 11, y1: 20, x2: 110, y2: 220 },
    ]);
  });
});

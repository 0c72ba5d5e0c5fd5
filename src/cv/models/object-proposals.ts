import { decodeGrey, round } from '../image.js';
import { effectiveParameters, type CvModel, type Detection, type ModelResult } from './port.js';

/**
 * Where might objects be? A classical pipeline, no learned weights:
 * luminance → Gaussian blur (σ 1) → Otsu threshold → the minority side of the threshold is foreground
 * (darker or brighter than the background) → 8-connected components (union-find over the pixel buffer)
 * → one box per component covering at least 0.1% of the image, best 100 by confidence.
 * Works on the image scaled to fit 640 × 640; boxes are normalized, so they hold for the full image.
 */
export const objectProposalSettings = {
  analysisSide: 640,
  blurSigma: 1,
  /** Components smaller than this fraction of the image are noise. */
  minAreaFraction: 0.001,
  /** Components larger than this fraction are background that leaked through. */
  maxAreaFraction: 0.9,
  /** Below this difference (0..255) between the two classes' means the image is one flat region. */
  minClassContrast: 24,
  maxDetections: 100,
} as const;

/** Otsu's threshold: the level that maximises the between-class variance of the histogram. */
export const otsuThreshold = (histogram: readonly number[], total: number): number => {
  let sumAll = 0;
  for (let level = 0; level < 256; level += 1) sumAll += level * histogram[level]!;
  let sumBelow = 0;
  let countBelow = 0;
  let best = 0;
  let bestVariance = -1;
  for (let level = 0; level < 256; level += 1) {
    countBelow += histogram[level]!;
    if (countBelow === 0) continue;
    const countAbove = total - countBelow;
    if (countAbove === 0) break;
    sumBelow += level * histogram[level]!;
    const meanBelow = sumBelow / countBelow;
    const meanAbove = (sumAll - sumBelow) / countAbove;
    const variance = countBelow * countAbove * (meanBelow - meanAbove) ** 2;
    if (variance > bestVariance) {
      bestVariance = variance;
      best = level;
    }
  }
  return best;
};

export interface Component {
  area: number;
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
  /** Sum of the grey values of the component's pixels. */
  sum: number;
}

/**
 * 8-connected components of the pixels where `mask` is 1: two-pass labelling with a union-find over the
 * provisional labels.
 */
export const connectedComponents = (
  mask: Uint8Array,
  grey: Uint8Array,
  width: number,
  height: number,
): Component[] => {
  const labels = new Int32Array(width * height);
  const parent: number[] = [0];
  const find = (label: number): number => {
    let root = label;
    while (parent[root] !== root) root = parent[root]!;
    while (parent[label] !== root) {
      const next = parent[label]!;
      parent[label] = root;
      label = next;
    }
    return root;
  };
  const union = (a: number, b: number): number => {
    const rootA = find(a);
    const rootB = find(b);
    if (rootA === rootB) return rootA;
    const [low, high] = rootA < rootB ? [rootA, rootB] : [rootB, rootA];
    parent[high] = low;
    return low;
  };
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const i = y * width + x;
      if (!mask[i]) continue;
      // The already-visited neighbours: west, north-west, north, north-east.
      let label = 0;
      const neighbours = [
        x > 0 ? labels[i - 1]! : 0,
        x > 0 && y > 0 ? labels[i - width - 1]! : 0,
        y > 0 ? labels[i - width]! : 0,
        x < width - 1 && y > 0 ? labels[i - width + 1]! : 0,
      ];
      for (const neighbour of neighbours) {
        if (neighbour === 0) continue;
        label = label === 0 ? find(neighbour) : union(label, neighbour);
      }
      if (label === 0) {
        label = parent.length;
        parent.push(label);
      }
      labels[i] = label;
    }
  }
  const components = new Map<number, Component>();
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const i = y * width + x;
      if (labels[i] === 0) continue;
      const root = find(labels[i]!);
      const component = components.get(root);
      if (component) {
        component.area += 1;
        component.sum += grey[i]!;
        if (x < component.minX) component.minX = x;
        if (x > component.maxX) component.maxX = x;
        if (y < component.minY) component.minY = y;
        if (y > component.maxY) component.maxY = y;
      } else {
        components.set(root, { area: 1, minX: x, minY: y, maxX: x, maxY: y, sum: grey[i]! });
      }
    }
  }
  return [...components.values()];
};

export const objectProposals: CvModel = {
  name: 'object-proposals',
  kind: 'builtin',
  deprecated: { replacement: 'objects-coco' },
  description:
    'Deprecated: use objects-coco to learn what is in a photograph. This model does not recognize anything: it boxes regions darker or brighter than the background (Otsu threshold and connected components over the blurred luminance), labelled dark-object or bright-object. Classical image analysis with no learned weights; kept for jobs that rely on it (a silhouette on a plain background, a specimen on a tray).',
  returns: {
    detections:
      'one per region: label dark-object or bright-object, confidence = sqrt(contrast) × (0.5 + 0.5 × fill), bbox normalized from the top-left corner, plus areaFraction, contrast (0..1) and fill (area / box area)',
    summary: {
      objects: 'how many detections are returned (at most 100)',
      candidates: 'regions above the minimum area, before the cap',
      threshold: 'the Otsu threshold, 0..255',
      polarity: 'dark or bright: which side of the threshold is foreground (the minority)',
      backgroundLuminance: 'mean luminance of the background, 0..255',
      analysed: '{width, height} the image was analysed at',
    },
  },
  run: async (image, { signal, decode, parameters }): Promise<ModelResult> => {
    const settings = objectProposalSettings;
    const { minConfidence, maxDetections } = effectiveParameters(parameters, {
      minConfidence: 0,
      maxDetections: settings.maxDetections,
    });
    const { data, width, height } = await decode(() =>
      decodeGrey(image, { maxSide: settings.analysisSide, blurSigma: settings.blurSigma, signal }),
    );
    const total = width * height;
    const histogram = new Array<number>(256).fill(0);
    for (let i = 0; i < total; i += 1) histogram[data[i]!]! += 1;
    const threshold = otsuThreshold(histogram, total);
    let countBelow = 0;
    let sumBelow = 0;
    let sumAll = 0;
    for (let level = 0; level < 256; level += 1) {
      sumAll += level * histogram[level]!;
      if (level <= threshold) {
        countBelow += histogram[level]!;
        sumBelow += level * histogram[level]!;
      }
    }
    const countAbove = total - countBelow;
    const meanBelow = countBelow ? sumBelow / countBelow : 0;
    const meanAbove = countAbove ? (sumAll - sumBelow) / countAbove : 255;
    // The background is the majority class; objects are what differs from it.
    const polarity: 'dark' | 'bright' = countBelow <= countAbove ? 'dark' : 'bright';
    const backgroundLuminance = polarity === 'dark' ? meanAbove : meanBelow;
    const summary = (detections: Detection[], candidates: number): ModelResult => ({
      detections,
      summary: {
        objects: detections.length,
        candidates,
        threshold,
        polarity,
        backgroundLuminance: round(backgroundLuminance, 2),
        analysed: { width, height },
      },
    });
    if (countBelow === 0 || countAbove === 0 || meanAbove - meanBelow < settings.minClassContrast) {
      return summary([], 0);
    }
    const mask = new Uint8Array(total);
    for (let i = 0; i < total; i += 1) {
      const below = data[i]! <= threshold;
      mask[i] = (polarity === 'dark') === below ? 1 : 0;
    }
    if (signal.aborted) throw signal.reason;
    const components = connectedComponents(mask, data, width, height).filter(
      (c) => c.area >= settings.minAreaFraction * total && c.area <= settings.maxAreaFraction * total,
    );
    const detections = components
      .map((c): Detection => {
        const boxWidth = c.maxX - c.minX + 1;
        const boxHeight = c.maxY - c.minY + 1;
        const contrast = Math.min(1, Math.abs(c.sum / c.area - backgroundLuminance) / 255);
        const fill = c.area / (boxWidth * boxHeight);
        return {
          label: polarity === 'dark' ? 'dark-object' : 'bright-object',
          confidence: round(Math.min(1, Math.sqrt(contrast) * (0.5 + 0.5 * fill))),
          bbox: {
            x: round(c.minX / width),
            y: round(c.minY / height),
            width: round(boxWidth / width),
            height: round(boxHeight / height),
          },
          areaFraction: round(c.area / total, 6),
          contrast: round(contrast),
          fill: round(fill),
        };
      })
      .filter((detection) => detection.confidence >= minConfidence)
      .sort((a, b) => b.confidence - a.confidence || a.bbox.y - b.bbox.y || a.bbox.x - b.bbox.x)
      .slice(0, Math.min(maxDetections, settings.maxDetections));
    return summary(detections, components.length);
  },
};

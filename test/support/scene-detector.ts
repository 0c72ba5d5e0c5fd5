import sharp from 'sharp';

/**
 * A stand-in for a YOLO detector, for tests of tensor models: it reads the input tensor it is sent back into
 * pixels (by the layout, datatype and scale it declares), finds the solid rectangles of known colours, and
 * answers a YOLOv8 or YOLOv5 output tensor with a box for each, duplicates around it and low-score noise. A
 * service that resizes, lays out or scales the image wrongly gets its boxes in the wrong places.
 */

export type Rgb = readonly [number, number, number];

export interface SceneRect {
  x: number;
  y: number;
  width: number;
  height: number;
  rgb: Rgb;
}

/** An image of solid rectangles on a grey background, as PNG (exact colours) or JPEG. */
export const sceneImage = async (
  width: number,
  height: number,
  rects: readonly SceneRect[],
  format: 'png' | 'jpeg' = 'png',
): Promise<Buffer> => {
  const pixels = Buffer.alloc(width * height * 3, 160);
  for (const rect of rects)
    for (let y = rect.y; y < rect.y + rect.height; y += 1)
      for (let x = rect.x; x < rect.x + rect.width; x += 1) pixels.set(rect.rgb, (y * width + x) * 3);
  const image = sharp(pixels, { raw: { width, height, channels: 3 } });
  return format === 'png' ? image.png().toBuffer() : image.jpeg({ quality: 95 }).toBuffer();
};

export interface SceneInput {
  width: number;
  height: number;
  layout: 'NCHW' | 'NHWC';
  datatype: 'FP32' | 'UINT8';
  scale: number;
}

/** The 0..255 value of channel `c` at (x, y) of a received input tensor's flat data. */
export const channelAt = (data: readonly number[], input: SceneInput, x: number, y: number, c: number) => {
  const { width, height } = input;
  const index = input.layout === 'NCHW' ? c * width * height + y * width + x : (y * width + x) * 3 + c;
  const value = data[index]!;
  return input.datatype === 'FP32' ? value / input.scale : value;
};

export interface FoundBox {
  classIndex: number;
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/** The bounding box of the pixels within `tolerance` of each colour, in the input's pixels. */
export const findColours = (
  data: readonly number[],
  input: SceneInput,
  colours: readonly Rgb[],
  tolerance = 40,
): FoundBox[] => {
  const boxes = colours.map((_, classIndex) => ({ classIndex, x1: Infinity, y1: Infinity, x2: -1, y2: -1 }));
  for (let y = 0; y < input.height; y += 1)
    for (let x = 0; x < input.width; x += 1) {
      const r = channelAt(data, input, x, y, 0);
      const g = channelAt(data, input, x, y, 1);
      const b = channelAt(data, input, x, y, 2);
      colours.forEach((colour, i) => {
        if (Math.abs(r - colour[0]) + Math.abs(g - colour[1]) + Math.abs(b - colour[2]) > tolerance) return;
        const box = boxes[i]!;
        box.x1 = Math.min(box.x1, x);
        box.y1 = Math.min(box.y1, y);
        box.x2 = Math.max(box.x2, x + 1);
        box.y2 = Math.max(box.y2, y + 1);
      });
    }
  return boxes.filter((box) => box.x2 > 0);
};

export interface RawBox {
  classIndex: number;
  score: number;
  cx: number;
  cy: number;
  w: number;
  h: number;
}

/** Each found box, two overlapping duplicates with lower scores, and a low-score box beside it. */
export const withDuplicatesAndNoise = (found: readonly FoundBox[]): RawBox[] =>
  found.flatMap(({ classIndex, x1, y1, x2, y2 }) => {
    const cx = (x1 + x2) / 2;
    const cy = (y1 + y2) / 2;
    const w = x2 - x1;
    const h = y2 - y1;
    return [
      { classIndex, score: 0.92, cx, cy, w, h },
      { classIndex, score: 0.81, cx: cx + 3, cy: cy + 2, w, h },
      { classIndex, score: 0.64, cx, cy, w: w * 1.1, h: h * 1.1 },
      { classIndex, score: 0.12, cx: cx + w, cy, w: w / 2, h: h / 2 },
    ];
  });

export interface YoloTensor {
  shape: number[];
  data: number[];
}

/**
 * The output tensor: yolov8 [1, 4 + C, N] (or [1, N, 4 + C] transposed), yolov5 [1, N, 5 + C] (objectness
 * 0.95, the class score chosen so that their product is the box's score), padded with empty boxes to `n`.
 */
export const yoloTensor = (
  boxes: readonly RawBox[],
  {
    format,
    classes,
    n = 100,
    transposed = false,
  }: { format: 'yolov8' | 'yolov5'; classes: number; n?: number; transposed?: boolean },
): YoloTensor => {
  const count = Math.max(n, boxes.length);
  const objectness = format === 'yolov5';
  const attributes = (objectness ? 5 : 4) + classes;
  const rows: number[][] = Array.from({ length: count }, (_, i) => {
    const row = new Array<number>(attributes).fill(0);
    const box = boxes[i];
    if (!box) return row;
    row[0] = box.cx;
    row[1] = box.cy;
    row[2] = box.w;
    row[3] = box.h;
    if (objectness) {
      row[4] = 0.95;
      row[5 + box.classIndex] = box.score / 0.95;
      // A second class, weaker, so the best class has to be chosen.
      row[5 + ((box.classIndex + 1) % classes)] = Math.min(box.score / 0.95, 0.2);
    } else {
      row[4 + box.classIndex] = box.score;
      row[4 + ((box.classIndex + 1) % classes)] = Math.min(box.score, 0.2);
    }
    return row;
  });
  if (format === 'yolov5' || transposed) return { shape: [1, count, attributes], data: rows.flat() };
  const data = new Array<number>(attributes * count);
  for (let a = 0; a < attributes; a += 1)
    for (let i = 0; i < count; i += 1) data[a * count + i] = rows[i]![a]!;
  return { shape: [1, attributes, count], data };
};

/** An infer reply carrying one FP32 output. */
export const tensorReply = (model: string, output: string, tensor: YoloTensor, version = '1') => ({
  model_name: model,
  model_version: version,
  outputs: [{ name: output, datatype: 'FP32', shape: tensor.shape, data: tensor.data }],
});

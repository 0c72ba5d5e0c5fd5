import sharp, { type OutputInfo } from 'sharp';
import { displayedSize, storedHeader } from '../image.js';
import { CvModelError } from './port.js';
import type { TensorInputSetting } from './tensor-settings.js';

/**
 * Pre-processing for a tensor model (src/cv/models/tensor.ts): the stored image → the input tensor the
 * server expects, and the way back from the tensor's coordinates to the image's.
 */

/** Where the image sits in the input tensor: input x = image x × scaleX + padX (likewise y). */
export interface Placement {
  scaleX: number;
  scaleY: number;
  padX: number;
  padY: number;
}

/**
 * Input tensor pixels → the image's (the letterbox undone), clipped to the image: for a model's boxes,
 * `x1`/`x2` through `x` and `y1`/`y2` through `y`.
 */
export const imageCoordinates = (placement: Placement, image: { width: number; height: number }) => ({
  x: (x: number) => Math.min(image.width, Math.max(0, (x - placement.padX) / placement.scaleX)),
  y: (y: number) => Math.min(image.height, Math.max(0, (y - placement.padY) / placement.scaleY)),
});

export interface PreparedInput {
  /** The 0..255 channel values in the tensor's order (NCHW planar or NHWC interleaved), RGB. */
  values: Uint8Array;
  /** The image as displayed (EXIF orientation applied). */
  image: { width: number; height: number };
  placement: Placement;
}

/** Ultralytics' letterbox grey, also the background a transparent image is flattened on. */
export const padValue = 114;
const grey = { r: padValue, g: padValue, b: padValue };

/** The letterbox of a `width` × `height` image in the input: aspect ratio kept, centred, padded. */
export const letterbox = (width: number, height: number, input: { width: number; height: number }) => {
  const ratio = Math.min(input.width / width, input.height / height);
  const inner = {
    width: Math.max(1, Math.min(input.width, Math.round(width * ratio))),
    height: Math.max(1, Math.min(input.height, Math.round(height * ratio))),
  };
  const padX = Math.floor((input.width - inner.width) / 2);
  const padY = Math.floor((input.height - inner.height) / 2);
  return {
    inner,
    placement: { scaleX: inner.width / width, scaleY: inner.height / height, padX, padY },
  };
};

const planar = (interleaved: Buffer, pixels: number): Uint8Array => {
  const out = new Uint8Array(pixels * 3);
  for (let i = 0, j = 0; i < pixels; i += 1, j += 3) {
    out[i] = interleaved[j]!;
    out[pixels + i] = interleaved[j + 1]!;
    out[2 * pixels + i] = interleaved[j + 2]!;
  }
  return out;
};

/**
 * Decodes the stored bytes (EXIF rotation applied, alpha flattened on grey, CMYK or greyscale turned into
 * 3-channel sRGB) and resizes them into the input: letterboxed (padded with grey 114) or stretched. Fails
 * with `media_unreadable` for bytes sharp cannot decode in full.
 */
export const prepareInput = async (
  image: Buffer,
  input: Pick<TensorInputSetting, 'width' | 'height' | 'layout' | 'resize'>,
  signal?: AbortSignal,
): Promise<PreparedInput> => {
  signal?.throwIfAborted();
  const header = storedHeader(image);
  const shown = displayedSize(header);
  const fit =
    input.resize === 'letterbox'
      ? letterbox(shown.width, shown.height, input)
      : {
          inner: { width: input.width, height: input.height },
          placement: {
            scaleX: input.width / shown.width,
            scaleY: input.height / shown.height,
            padX: 0,
            padY: 0,
          },
        };
  const { inner, placement } = fit;
  let raw: { data: Buffer; info: OutputInfo };
  try {
    raw = await sharp(image, { failOn: 'truncated', limitInputPixels: header.width * header.height })
      .rotate()
      .flatten({ background: grey })
      .toColourspace('srgb')
      .resize({ width: inner.width, height: inner.height, fit: 'fill', kernel: 'linear' })
      .extend({
        top: placement.padY,
        bottom: input.height - inner.height - placement.padY,
        left: placement.padX,
        right: input.width - inner.width - placement.padX,
        background: grey,
      })
      .removeAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new CvModelError(
      'media_unreadable',
      `The image cannot be decoded: ${(error as Error).message.split('\n')[0]!}`,
    );
  }
  const { data, info } = raw;
  if (info.width !== input.width || info.height !== input.height || info.channels !== 3)
    throw new Error(
      `Pre-processing gave ${info.width}×${info.height}×${info.channels}, not ${input.width}×${input.height}×3`,
    );
  const pixels = input.width * input.height;
  return {
    values:
      input.layout === 'NCHW'
        ? planar(data, pixels)
        : new Uint8Array(data.buffer, data.byteOffset, pixels * 3),
    image: shown,
    placement,
  };
};

/** The shortest decimal that reads back as the same 32-bit float: what the server will hold. */
export const float32Text = (value: number): string => {
  const target = Math.fround(value);
  for (let digits = 1; digits < 9; digits += 1) {
    const text = String(Number(target.toPrecision(digits)));
    if (Math.fround(Number(text)) === target) return text;
  }
  return String(Number(target.toPrecision(9)));
};

/** The tensor's shape for this input: [1, 3, H, W] or [1, H, W, 3]. */
export const inputShape = (input: TensorInputSetting): number[] =>
  input.layout === 'NCHW' ? [1, 3, input.height, input.width] : [1, input.height, input.width, 3];

/**
 * The infer request's JSON body, `{"inputs": [{"name", "shape", "datatype", "data": [...]}]}`, written
 * straight into one buffer: each of the 256 channel values has its text worked out once, so 1.2 million
 * numbers take a copy loop rather than 1.2 million number-to-string conversions and a concatenation.
 */
export const inferBody = (input: TensorInputSetting, values: Uint8Array): Buffer => {
  const texts = Array.from({ length: 256 }, (_, byte) =>
    Buffer.from(input.datatype === 'UINT8' ? String(byte) : float32Text(byte * input.scale), 'latin1'),
  );
  const widest = Math.max(...texts.map((text) => text.length));
  const table = new Uint8Array(256 * widest);
  const lengths = new Uint8Array(256);
  texts.forEach((text, byte) => {
    table.set(text, byte * widest);
    lengths[byte] = text.length;
  });
  const head = Buffer.from(
    `{"inputs":[{"name":${JSON.stringify(input.name)},"shape":${JSON.stringify(inputShape(input))},` +
      `"datatype":"${input.datatype}","data":[`,
  );
  const tail = Buffer.from(']}]}');
  const out = Buffer.allocUnsafe(head.length + values.length * (widest + 1) + tail.length);
  let at = head.copy(out, 0);
  const comma = 0x2c;
  for (let i = 0; i < values.length; i += 1) {
    if (i > 0) out[at++] = comma;
    const byte = values[i]!;
    const from = byte * widest;
    const length = lengths[byte]!;
    for (let k = 0; k < length; k += 1) out[at++] = table[from + k]!;
  }
  at += tail.copy(out, at);
  return out.subarray(0, at);
};

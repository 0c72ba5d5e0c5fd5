import sharp from 'sharp';

export interface TestImageBox {
  x: number;
  y: number;
  width: number;
  height: number;
  /** Gray level, 0 (black) .. 255 (white). */
  value: number;
}

export interface TestImageOptions {
  width: number;
  height: number;
  format: 'jpeg' | 'png' | 'webp';
  /** Gray level of the background, 0..255; 128 unless told. */
  background?: number;
  /** Rectangles of a flat gray level painted over the background, in order (later ones on top), clipped to the image. */
  boxes?: { x: number; y: number; width: number; height: number; value: number }[];
  /** Gaussian blur sigma (sharp's `blur`, at least 0.3) applied after painting, for soft edges. */
  blur?: number;
}

const gray = (value: number) => Math.max(0, Math.min(255, Math.round(value)));

/**
 * A deterministic synthetic test image: a gray background with flat gray rectangles at known places,
 * optionally blurred, encoded as JPEG, PNG or WebP. The same options give the same bytes, so tests can
 * compare uploads and downloads byte for byte and know where the dark and bright regions are.
 */
export const testImage = async (options: {
  width: number;
  height: number;
  format: 'jpeg' | 'png' | 'webp';
  background?: number;
  boxes?: { x: number; y: number; width: number; height: number; value: number }[];
  blur?: number;
}): Promise<Buffer> => {
  const { width, height, format } = options;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1)
    throw new Error(`testImage: bad size ${width}x${height}`);
  const pixels = Buffer.alloc(width * height, gray(options.background ?? 128));
  for (const box of options.boxes ?? []) {
    const x0 = Math.max(0, Math.floor(box.x));
    const y0 = Math.max(0, Math.floor(box.y));
    const x1 = Math.min(width, Math.floor(box.x + box.width));
    const y1 = Math.min(height, Math.floor(box.y + box.height));
    const value = gray(box.value);
    for (let y = y0; y < y1; y++) pixels.fill(value, y * width + x0, y * width + Math.max(x0, x1));
  }
  let image = sharp(pixels, { raw: { width, height, channels: 1 } });
  if (options.blur !== undefined && options.blur > 0) image = image.blur(Math.max(0.3, options.blur));
  // Encoded as 3-channel sRGB so every decoder (and every colour pipeline) reads it the same way.
  image = image.toColourspace('srgb');
  switch (format) {
    case 'jpeg':
      return image.jpeg({ quality: 90 }).toBuffer();
    case 'png':
      return image.png().toBuffer();
    case 'webp':
      return image.webp({ quality: 90 }).toBuffer();
  }
};

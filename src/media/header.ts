import type { MediaContentType } from '../observations/observation.js';

/**
 * The decode budget, checked from the header before any pixel is decoded: a small file can hold an image
 * that decodes to gigabytes (7000 × 7000 pixels of 16-bit RGBA is a 381 KB PNG of zeros and 392 MB
 * decoded). The defaults: 40 megapixels (a 7,300 × 5,500 photo; phone cameras bin to 12 MP), and 160 MB
 * decoded, which is 40 MP of 8-bit RGBA or 20 MP of 16-bit RGBA.
 */
export interface DecodeLimits {
  /** Width × height (MEDIA_MAX_PIXELS). */
  maxPixels: number;
  /** Width × height × channels × bytes per sample (MEDIA_MAX_DECODED_BYTES). */
  maxDecodedBytes: number;
}

export const defaultDecodeLimits: DecodeLimits = { maxPixels: 40_000_000, maxDecodedBytes: 160_000_000 };

/**
 * What an image's header says, read here in JavaScript from a few dozen bytes: no decoder, no thread of
 * libuv's pool, no memory beyond the bytes. It is what the decode budget is checked against before any
 * pixel is decoded (src/media/images.ts), and what a CV job learns the image's size and orientation from
 * instead of asking the decoder again (src/cv/image.ts).
 *
 * The channel count and sample size are those libvips decodes to: a palette PNG becomes RGB (RGBA with a
 * tRNS chunk), PNGs of fewer than 8 bits become 8-bit, grey or RGB with tRNS gain an alpha channel.
 */
export interface ImageHeader {
  contentType: MediaContentType;
  /** In stored pixels, before any EXIF orientation. */
  width: number;
  height: number;
  /** Channels once decoded: 1 grey, 2 grey and alpha, 3 colour, 4 colour and alpha (or CMYK). */
  channels: number;
  /** Bits per sample once decoded: 8 or 16. */
  bitsPerSample: 8 | 16;
  /** The EXIF orientation, 1 to 8; 1 without EXIF. 5 to 8 swap width and height as displayed. */
  orientation: number;
}

const text = (bytes: Uint8Array, offset: number, length: number) =>
  String.fromCharCode(...bytes.subarray(offset, offset + length));

const viewOf = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** The Orientation tag (0x0112) of IFD0 of a TIFF structure (what an EXIF block holds), or 1. */
const tiffOrientation = (tiff: Uint8Array): number => {
  if (tiff.length < 8) return 1;
  const little = text(tiff, 0, 2) === 'II';
  if (!little && text(tiff, 0, 2) !== 'MM') return 1;
  const view = viewOf(tiff);
  const ifd = view.getUint32(4, little);
  if (ifd + 2 > tiff.length) return 1;
  const entries = view.getUint16(ifd, little);
  for (let i = 0; i < entries; i += 1) {
    const entry = ifd + 2 + i * 12;
    if (entry + 12 > tiff.length) return 1;
    if (view.getUint16(entry, little) !== 0x0112) continue;
    const value = view.getUint16(entry + 8, little);
    return value >= 1 && value <= 8 ? value : 1;
  }
  return 1;
};

/** An EXIF block, with or without its `Exif\0\0` prefix. */
const exifOrientation = (exif: Uint8Array): number =>
  tiffOrientation(text(exif, 0, 4) === 'Exif' ? exif.subarray(6) : exif);

const pngHeader = (bytes: Uint8Array): ImageHeader | null => {
  const view = viewOf(bytes);
  if (bytes.length < 33 || text(bytes, 12, 4) !== 'IHDR') return null;
  const width = view.getUint32(16);
  const height = view.getUint32(20);
  const depth = bytes[24]!;
  const colourType = bytes[25]!;
  let transparency = false;
  let orientation = 1;
  for (let offset = 8; offset + 12 <= bytes.length;) {
    const length = view.getUint32(offset);
    const type = text(bytes, offset + 4, 4);
    // tRNS and eXIf come before the image data: the walk stops there, whatever the number of IDAT chunks.
    if (offset + 12 + length > bytes.length || type === 'IDAT' || type === 'IEND') break;
    if (type === 'tRNS') transparency = true;
    if (type === 'eXIf') orientation = exifOrientation(bytes.subarray(offset + 8, offset + 8 + length));
    offset += 12 + length;
  }
  const alpha = transparency ? 1 : 0;
  const channels = { 0: 1 + alpha, 2: 3 + alpha, 3: 3 + alpha, 4: 2, 6: 4 }[colourType];
  if (channels === undefined) return null;
  return {
    contentType: 'image/png',
    width,
    height,
    channels,
    bitsPerSample: depth === 16 ? 16 : 8,
    orientation,
  };
};

/** Start-of-frame markers: baseline, extended, progressive, lossless, with either entropy coding. */
const startOfFrame = new Set([0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]);

const jpegHeader = (bytes: Uint8Array): ImageHeader | null => {
  const view = viewOf(bytes);
  let orientation = 1;
  let offset = 2;
  while (offset + 4 <= bytes.length) {
    if (bytes[offset] !== 0xff) return null;
    const marker = bytes[offset + 1]!;
    if (marker === 0xff) {
      offset += 1; // fill byte
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      offset += 2; // markers without a length
      continue;
    }
    const length = view.getUint16(offset + 2);
    const segment = bytes.subarray(offset + 4, offset + 2 + length);
    if (marker === 0xe1 && orientation === 1 && text(segment, 0, 6) === 'Exif\0\0') {
      orientation = exifOrientation(segment);
    }
    if (startOfFrame.has(marker)) {
      if (segment.length < 6) return null;
      const height = view.getUint16(offset + 5);
      const width = view.getUint16(offset + 7);
      // A height of 0 is given later in a DNL marker: too unusual to accept unread.
      if (!width || !height) return null;
      return {
        contentType: 'image/jpeg',
        width,
        height,
        channels: segment[5]!,
        bitsPerSample: segment[0]! > 8 ? 16 : 8,
        orientation,
      };
    }
    if (marker === 0xda) return null; // scan data before any frame header
    offset += 2 + length;
  }
  return null;
};

const webpHeader = (bytes: Uint8Array): ImageHeader | null => {
  const view = viewOf(bytes);
  let size: { width: number; height: number; alpha: boolean } | null = null;
  let orientation = 1;
  // A WebP has a handful of chunks; a file of a million tiny ones is not read to its end.
  for (let offset = 12, chunks = 0; offset + 8 <= bytes.length && chunks < 64; chunks += 1) {
    const type = text(bytes, offset, 4);
    const length = view.getUint32(offset + 4, true);
    const data = bytes.subarray(offset + 8, offset + 8 + length);
    if (type === 'VP8X' && data.length >= 10) {
      const flags = data[0]!;
      const width = 1 + (data[4]! | (data[5]! << 8) | (data[6]! << 16));
      const height = 1 + (data[7]! | (data[8]! << 8) | (data[9]! << 16));
      size = { width, height, alpha: (flags & 0x10) !== 0 };
    } else if (type === 'VP8 ' && !size && data.length >= 10) {
      if (data[3] !== 0x9d || data[4] !== 0x01 || data[5] !== 0x2a) return null;
      const d = viewOf(data);
      size = { width: d.getUint16(6, true) & 0x3fff, height: d.getUint16(8, true) & 0x3fff, alpha: false };
    } else if (type === 'VP8L' && !size && data.length >= 5) {
      if (data[0] !== 0x2f) return null;
      const bits = viewOf(data).getUint32(1, true);
      size = {
        width: 1 + (bits & 0x3fff),
        height: 1 + ((bits >>> 14) & 0x3fff),
        alpha: (bits >>> 28) % 2 === 1,
      };
    } else if (type === 'EXIF') {
      orientation = exifOrientation(data);
    }
    offset += 8 + length + (length % 2);
  }
  if (!size || !size.width || !size.height) return null;
  return {
    contentType: 'image/webp',
    width: size.width,
    height: size.height,
    channels: size.alpha ? 4 : 3,
    bitsPerSample: 8,
    orientation,
  };
};

/** The header of a JPEG, PNG or WebP image of the sniffed type, or null when none can be read. */
export const readHeader = (bytes: Uint8Array, contentType: MediaContentType): ImageHeader | null => {
  try {
    switch (contentType) {
      case 'image/png':
        return pngHeader(bytes);
      case 'image/jpeg':
        return jpegHeader(bytes);
      case 'image/webp':
        return webpHeader(bytes);
      default: {
        const unknown: never = contentType;
        return unknown;
      }
    }
  } catch (error) {
    // A length field pointing past the end: a DataView read out of range.
    if (error instanceof RangeError) return null;
    throw error;
  }
};

/** The bytes the decoder holds for the whole image: width × height × channels × bytes per sample. */
export const decodedBytes = (header: ImageHeader): number =>
  header.width * header.height * header.channels * (header.bitsPerSample / 8);

const count = (n: number) => n.toLocaleString('en-US');

/** Why an image of this header is over the budget, naming the limit; null when it is within it. */
export const overBudget = (header: ImageHeader, limits: DecodeLimits): string | null => {
  const { width, height, channels, bitsPerSample } = header;
  const size = `${count(width)} × ${count(height)} pixels`;
  if (width * height > limits.maxPixels) {
    return `The image is ${size} (${count(width * height)}), over the limit of ${count(limits.maxPixels)} pixels (MEDIA_MAX_PIXELS)`;
  }
  const bytes = decodedBytes(header);
  if (bytes > limits.maxDecodedBytes) {
    return `The image is ${size} of ${channels} channels at ${bitsPerSample} bits: ${count(bytes)} bytes decoded, over the limit of ${count(limits.maxDecodedBytes)} bytes (MEDIA_MAX_DECODED_BYTES)`;
  }
  return null;
};

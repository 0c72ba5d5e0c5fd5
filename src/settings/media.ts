import { parseByteSize } from '../core/durations.js';
import { defaultDecodeLimits } from '../media/header.js';
import { countSetting, declare, namedSettings, positiveCount, wholeNumber } from './declare.js';

/** Media: the bounds of an upload and of its decoding. */
export const mediaSettings = namedSettings({
  MEDIA_MAX_BYTES: declare({
    default: '10mb',
    expected: 'a size such as 10mb or 512kb',
    description: 'largest image upload; larger bodies get `413`',
    parse: parseByteSize,
  }),
  MEDIA_MAX_PIXELS: declare({
    default: String(defaultDecodeLimits.maxPixels),
    expected: 'a positive whole number of pixels such as 40000000',
    description:
      'largest image decoded, in pixels (width × height), checked from the header; larger get `413`',
    parse: wholeNumber(/^[1-9]\d{0,11}$/),
  }),
  MEDIA_MAX_DECODED_BYTES: declare({
    default: String(defaultDecodeLimits.maxDecodedBytes),
    expected: 'a size above zero such as 160000000 or 150mb',
    description:
      'largest image decoded, in bytes (width × height × channels × bytes per sample); larger get `413`',
    parse: (s) => parseByteSize(s) || undefined,
  }),
  MEDIA_DECODE_CONCURRENCY: declare({
    default: '1',
    expected: 'a positive whole number, at most UV_THREADPOOL_SIZE − 2',
    description: 'image decodes at once, uploads and CV jobs together (see Image decoding and memory)',
    parse: positiveCount,
  }),
  MEDIA_DECODE_QUEUE: countSetting(
    '8',
    'uploads that may wait for a decode; beyond it `503` with `Retry-After`',
  ),
});

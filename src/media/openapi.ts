import { observationId, observationsPath } from '../observations/openapi.js';
import { exampleIds } from '../openapi/components.js';
import { bytesOf, operation, type BuiltOperation } from '../openapi/operation.js';
import { mediaSettings } from '../settings/media.js';
import { parseByteSize } from '../core/durations.js';
import { componentSchema, enumOf, ref, type Schema } from '../openapi/schema.js';
import { ThumbnailQuery, thumbnailWidths } from './thumbnails.js';
import { mediaContentTypes as mediaTypes, ObservationMediaCodec } from '../observations/codecs.js';

/** The images attached to observations: their schema and operations. */

export const mediaSchemas: Record<string, Schema> = { Media: componentSchema(ObservationMediaCodec) };

const base = observationsPath;

const defaultMediaMaxBytes = parseByteSize(mediaSettings.MEDIA_MAX_BYTES.default)!;

export const mediaOperations = (): BuiltOperation[] => [
  operation({
    method: 'post',
    path: `${base}/:id/media`,
    operationId: 'uploadMedia',
    summary: 'Attach an image',
    description:
      'The raw bytes of a JPEG, PNG or WebP image, at most MEDIA_MAX_BYTES (10 MB): no JSON, no multipart. ' +
      'The type is read from the bytes, never from Content-Type; the image is decoded in full before ' +
      'anything is stored. The same bytes again answer 200 with the medium already attached. ' +
      'An image over MEDIA_MAX_PIXELS (40,000,000) pixels or MEDIA_MAX_DECODED_BYTES (160,000,000) decoded ' +
      'gets 413 from its header, before any decoding; 503 with Retry-After when MEDIA_DECODE_QUEUE uploads ' +
      'already wait to be decoded.',
    tag: 'Media',
    access: { scope: 'observations:write' },
    pathParameters: observationId,
    body: {
      mediaTypes: [...mediaTypes, 'application/octet-stream'],
      description: 'The image',
      // The default: an operator who sets MEDIA_MAX_BYTES changes what the service takes, not this document.
      maxBytes: defaultMediaMaxBytes,
    },
    responses: {
      '201': {
        description: 'Attached',
        headers: ['Location', 'X-Position'],
        content: { 'application/json': ref('Media') },
      },
      '200': {
        description: 'These bytes were attached already',
        headers: ['Location'],
        content: { 'application/json': ref('Media') },
      },
    },
    problems: ['413', '415', '503'],
  }),
  operation({
    method: 'get',
    path: `${base}/:id/media/:mediaId`,
    operationId: 'downloadMedia',
    summary: 'Download an image',
    description: 'The bytes never change under an id: `Cache-Control: private, max-age=31536000, immutable`.',
    tag: 'Media',
    access: { scope: 'observations:read' },
    pathParameters: {
      ...observationId,
      mediaId: { description: "The medium's id", example: exampleIds.media },
    },
    headers: ['IfNoneMatch'],
    responses: {
      '200': {
        description: 'The image',
        headers: ['MediaETag'],
        content: Object.fromEntries(mediaTypes.map((type) => [type, bytesOf(type)])),
      },
      '304': { description: 'Not modified', headers: ['MediaETag'] },
    },
  }),
  operation({
    method: 'get',
    path: `${base}/:id/media/:mediaId/thumbnail`,
    operationId: 'downloadThumbnail',
    summary: 'Download a small copy of an image',
    description:
      'The image turned upright and shrunk to `width` pixels wide (never enlarged), as WebP. The widths are a ' +
      'fixed set; its decode is bounded by MEDIA_MAX_PIXELS and MEDIA_MAX_DECODED_BYTES as an upload is, ' +
      'and takes a turn in the decode queue (503 with Retry-After when it is full). ' +
      '`Cache-Control: private, max-age=31536000, immutable`; the ETag is the SHA-256 and the width.',
    tag: 'Media',
    access: { scope: 'observations:read' },
    pathParameters: {
      ...observationId,
      mediaId: { description: "The medium's id", example: exampleIds.media },
    },
    query: {
      codec: ThumbnailQuery,
      parameters: {
        width: {
          schema: enumOf(thumbnailWidths.map(String), { default: String(thumbnailWidths[0]) }),
          description: 'The width in pixels',
          example: '160',
        },
      },
    },
    headers: ['IfNoneMatch'],
    responses: {
      '200': {
        description: 'The thumbnail',
        headers: ['ThumbnailETag'],
        content: { 'image/webp': bytesOf('image/webp') },
      },
      '304': { description: 'Not modified', headers: ['ThumbnailETag'] },
    },
    problems: ['503'],
  }),
];

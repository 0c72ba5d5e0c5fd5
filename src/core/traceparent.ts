/**
 * The W3C Trace Context `traceparent` header (https://www.w3.org/TR/trace-context/#traceparent-header),
 * read and written without the SDK: the correlation id of a request is taken from it even with traces off.
 */

// Lowercase hex only: upper case makes the header invalid.
const traceparentPattern = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const zeros = /^0+$/;

export interface TraceParent {
  traceId: string;
  spanId: string;
  traceFlags: number;
}

/**
 * A `traceparent` header, or null when it is invalid and must be ignored: version ff, a version 00 header
 * with anything after the flags, a header of a later version not cut at a dash, or all-zero ids.
 */
export const parseTraceparent = (header: string | undefined): TraceParent | null => {
  if (!header) return null;
  const [, version, traceId, spanId, flags, rest] = traceparentPattern.exec(header) ?? [];
  if (!version || !traceId || !spanId || !flags) return null;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (zeros.test(traceId) || zeros.test(spanId)) return null;
  return { traceId, spanId, traceFlags: parseInt(flags, 16) };
};

export const formatTraceparent = ({ traceId, spanId, traceFlags }: TraceParent): string =>
  `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`;

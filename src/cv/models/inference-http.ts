import { request } from 'undici';
import { CvModelError } from './port.js';

/**
 * One HTTP exchange with an inference server, shared by both remote modes (src/cv/models/remote.ts,
 * src/cv/models/tensor.ts): a time-out of the model's own beside the job's signal, a reply read up to a cap,
 * and each way of failing named as the job's error code.
 */

/** Replies larger than this are refused unread: an image's detections, or a detector's tensor, fit in it. */
export const maxReplyBytes = 16 * 1024 * 1024;

export const invalidReply = (message: string) => new CvModelError('model_reply_invalid', message);

const readCapped = async (body: AsyncIterable<Buffer>, limit: number): Promise<Buffer | null> => {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
};

export interface Exchange {
  /** The model's name in this service, for messages. */
  model: string;
  url: string;
  method: 'GET' | 'POST';
  body?: Buffer | string;
  timeoutMs: number;
  signal: AbortSignal;
}

/** The status and JSON body of a reply; fails with timeout, model_unreachable or model_reply_invalid. */
export const exchange = async ({
  model,
  url,
  method,
  body,
  timeoutMs,
  signal,
}: Exchange): Promise<{ status: number; json: unknown; excerpt: string }> => {
  const timeout = AbortSignal.timeout(timeoutMs);
  const both = AbortSignal.any([signal, timeout]);
  const timedOut = () =>
    new CvModelError('timeout', `The model ${model} did not answer within ${timeoutMs} ms`);
  let response;
  try {
    response = await request(url, {
      method,
      headers: {
        accept: 'application/json',
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body } : {}),
      signal: both,
    });
  } catch (error) {
    if (signal.aborted) throw error;
    if (timeout.aborted) throw timedOut();
    throw new CvModelError(
      'model_unreachable',
      `The model ${model} cannot be reached: ${(error as Error).message}`,
    );
  }
  let raw: Buffer | null;
  try {
    raw = await readCapped(response.body, maxReplyBytes);
  } catch (error) {
    if (signal.aborted) throw error;
    if (timeout.aborted) throw timedOut();
    throw new CvModelError(
      'model_error',
      `The model ${model} broke off its reply: ${(error as Error).message}`,
    );
  } finally {
    // An early return leaves the rest unread; let the connection go.
    response.body.destroy();
  }
  const excerpt = (raw ?? Buffer.alloc(0)).toString('utf8', 0, 200).replace(/\s+/g, ' ').trim();
  const status = response.statusCode;
  if (status < 200 || status > 299) return { status, json: undefined, excerpt };
  if (raw === null) throw invalidReply(`the reply is larger than ${maxReplyBytes} bytes`);
  // A readiness answer is a bare 200.
  if (raw.length === 0) return { status, json: undefined, excerpt };
  try {
    return { status, json: JSON.parse(raw.toString('utf8')) as unknown, excerpt };
  } catch {
    throw invalidReply('the reply is not JSON');
  }
};

/** A non-2xx answer as the job's `model_error`, quoting its start. */
export const answeredError = (model: string, status: number, excerpt: string) =>
  new CvModelError(
    'model_error',
    `The model ${model} answered HTTP ${status}${excerpt ? `: ${excerpt}` : ''}`,
  );

/** `{url}/v2/models/{name}[/versions/{version}]`: the Open Inference Protocol's path of one model. */
export const modelPath = (url: string, remoteName: string, version?: string) =>
  `${url}/v2/models/${encodeURIComponent(remoteName)}` +
  (version !== undefined ? `/versions/${encodeURIComponent(version)}` : '');

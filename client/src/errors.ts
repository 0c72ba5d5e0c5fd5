import type { FieldError, OAuthErrorBody, Problem } from './types.js';

/** Seconds from a `Retry-After` header: delay-seconds or an HTTP-date (RFC 9110 §10.2.3). */
export const parseRetryAfter = (value: string | null, now = Date.now()): number | undefined => {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
};

/**
 * An error answer of the API, built from its problem document (RFC 9457). Answers that are no problem
 * document (a proxy's HTML page) still become an ApiError, with `type` `about:blank` and the status text.
 */
export class ApiError extends Error {
  override readonly name: string = 'ApiError';
  /** The HTTP status. */
  readonly status: number;
  /** The problem type, e.g. `/problems/validation-error`. */
  readonly type: string;
  readonly title: string;
  readonly detail: string | undefined;
  /** The failing fields of a validation error (400); empty otherwise. */
  readonly errors: FieldError[];
  /** The request's id: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** Seconds to wait before retrying (`Retry-After`, on 429 and 503, and 409 for an in-flight key). */
  readonly retryAfter: number | undefined;
  /** On 403: the scope the route needs. */
  readonly requiredScope: string | undefined;
  /** The whole problem document (or what the body held). */
  readonly problem: Problem;
  readonly headers: Headers;

  constructor(status: number, problem: Problem, headers: Headers) {
    super(
      `${status} ${problem.title}${problem.detail ? `: ${problem.detail}` : ''}${
        problem.requestId ? ` (request ${problem.requestId})` : ''
      }`,
    );
    this.status = status;
    this.problem = problem;
    this.headers = headers;
    this.type = problem.type;
    this.title = problem.title;
    this.detail = problem.detail;
    this.errors = Array.isArray(problem.errors) ? problem.errors : [];
    this.requestId = problem.requestId ?? headers.get('x-request-id') ?? undefined;
    this.retryAfter = parseRetryAfter(headers.get('retry-after'));
    this.requiredScope = typeof problem.requiredScope === 'string' ? problem.requiredScope : undefined;
  }

  /** The message of the field at `path` (`position.lat`), if the error names it. */
  fieldError(path: string): string | undefined {
    return this.errors.find((error) => error.path === path)?.message;
  }
}

/** An RFC 6749 §5.2 error of the token endpoint: `invalid_client`, `invalid_scope`, … */
export class OAuthError extends ApiError {
  override readonly name: string = 'OAuthError';
  /** The RFC 6749 error code. */
  readonly error: string;
  readonly errorDescription: string | undefined;

  constructor(status: number, body: OAuthErrorBody, headers: Headers) {
    super(
      status,
      {
        type: body.type ?? `/problems/oauth-${body.error.replace(/_/g, '-')}`,
        title: body.title ?? body.error_description ?? body.error,
        status,
        ...(body.error_description ? { detail: body.error_description } : {}),
        ...(body.requestId ? { requestId: body.requestId } : {}),
      },
      headers,
    );
    this.error = body.error;
    this.errorDescription = body.error_description;
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The error for a response that is not ok, from its body (already read as text). */
export const errorFromResponse = (response: Response, text: string): ApiError => {
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (isObject(body) && typeof body.error === 'string') {
    return new OAuthError(response.status, body as unknown as OAuthErrorBody, response.headers);
  }
  const problem: Problem =
    isObject(body) && typeof body.type === 'string' && typeof body.title === 'string'
      ? ({ ...body, status: response.status } as Problem)
      : {
          type: 'about:blank',
          title: response.statusText || `HTTP ${response.status}`,
          status: response.status,
          ...(text && !isObject(body) ? { detail: text.slice(0, 500) } : {}),
        };
  return new ApiError(response.status, problem, response.headers);
};

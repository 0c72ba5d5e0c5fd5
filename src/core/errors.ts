/**
 * The one error vocabulary. The domain and the adapters throw these; one HTTP middleware turns them into
 * RFC 9457 problem documents (see src/http/problem.ts).
 */

export interface FieldError {
  /** Dotted path of the offending field, e.g. `position.lat`; empty for the whole body. */
  path: string;
  message: string;
}

export abstract class DomainError extends Error {
  abstract readonly status: number;
  abstract readonly slug: string;
  abstract readonly title: string;
  /** Extra members of the problem document. */
  get extensions(): Record<string, unknown> {
    return {};
  }
  /** Response headers the status calls for (Retry-After, WWW-Authenticate). */
  get headers(): Record<string, string> {
    return {};
  }
}

/**
 * The base of an error class whose problem is the same for every instance, declared in one expression:
 * `class NotFoundError extends problemType(404, 'not-found', 'The resource does not exist') {}`.
 */
export const problemType = (status: number, slug: string, title: string) =>
  class extends DomainError {
    readonly status = status;
    readonly slug = slug;
    readonly title = title;
  };

/** How many failed fields a 400 lists: the rest are counted, so that a body failing everywhere costs little. */
export const maxListedErrors = 20;

export class ValidationError extends problemType(400, 'validation-error', 'The request is not valid') {
  readonly errors: FieldError[];
  /** Failed fields counted but not listed: past the first maxListedErrors, or never spelled out. */
  readonly omittedErrors: number;
  /** `uncounted`: failures beyond `errors`, known only by their number. */
  constructor(errors: FieldError[], uncounted = 0) {
    const listed = errors.slice(0, maxListedErrors);
    const omitted = errors.length - listed.length + uncounted;
    super(
      listed.map((e) => (e.path ? `${e.path}: ${e.message}` : e.message)).join('; ') +
        (omitted > 0 ? `; and ${omitted} more` : ''),
    );
    this.errors = listed;
    this.omittedErrors = omitted;
  }
  override get extensions() {
    return this.omittedErrors > 0
      ? { errors: this.errors, omittedErrors: this.omittedErrors }
      : { errors: this.errors };
  }
}

export class NotFoundError extends problemType(404, 'not-found', 'The resource does not exist') {}

export class ConflictError extends problemType(
  409,
  'conflict',
  'The request conflicts with the current state of the resource',
) {}

/** Optimistic concurrency: the stream moved on since the caller read it. */
export class VersionConflictError extends problemType(
  409,
  'version-conflict',
  'The resource was changed by another request',
) {
  constructor(
    readonly streamName: string,
    readonly expected: string,
    readonly actual: number,
  ) {
    super(`Expected version ${expected} but the resource is at version ${actual}`);
  }
}

/** The client's If-Match named a version that is no longer current. */
export class PreconditionFailedError extends problemType(
  412,
  'precondition-failed',
  'The resource does not match the If-Match precondition',
) {}

export class PayloadTooLargeError extends problemType(
  413,
  'payload-too-large',
  'The request body is too large',
) {}

export class UnsupportedMediaTypeError extends problemType(
  415,
  'unsupported-media-type',
  'The request body has an unsupported media type',
) {}

export class UnavailableError extends problemType(
  503,
  'unavailable',
  'The service cannot answer this request right now',
) {
  constructor(
    detail: string,
    readonly retryAfterSeconds = 1,
  ) {
    super(detail);
  }
  override get headers(): Record<string, string> {
    return { 'Retry-After': String(this.retryAfterSeconds) };
  }
}

/**
 * Another process holds the store's write lock (SQLite's "database is locked") for longer than a write
 * waits: a transient state, answered 503 with Retry-After; the same request succeeds once the lock is gone.
 */
export class StoreBusyError extends UnavailableError {
  override readonly slug = 'store-busy';
  override readonly title = 'The store is busy';

  /** From the SQLITE_BUSY or SQLITE_LOCKED error that a write kept getting. */
  static after(cause: unknown): StoreBusyError {
    const busy = new StoreBusyError(
      'Another process holds the store’s write lock; retry shortly',
      // Whole seconds: a client retrying after that finds the lock free, or gets this again at once.
      2,
    );
    busy.cause = cause;
    return busy;
  }
}

/**
 * A store refused a write because its disk is full or it is read-only (SQLITE_FULL, SQLITE_READONLY,
 * ENOSPC, EROFS). Nothing was written; the same request succeeds once space is back, without a restart.
 */
export class StoreUnavailableError extends UnavailableError {
  override readonly slug = 'store-unavailable';
  override readonly title = 'The service cannot store data right now';
  constructor(
    /** The store's own code, e.g. SQLITE_FULL or ENOSPC. */
    readonly code: string,
    retryAfterSeconds = 10,
  ) {
    super(
      /FULL|ENOSPC|EDQUOT/.test(code)
        ? `The storage is full (${code}); retry later`
        : `The storage is read-only (${code}); retry later`,
      retryAfterSeconds,
    );
  }

  /** The error as a StoreUnavailableError when a store failed for lack of space or write access; else null. */
  static from(error: unknown): StoreUnavailableError | null {
    if (error instanceof StoreUnavailableError) return error;
    if (typeof error !== 'object' || error === null) return null;
    const code = (error as { code?: unknown }).code;
    if (typeof code !== 'string') return null;
    // better-sqlite3's SqliteError codes (extended ones such as SQLITE_READONLY_DBMOVED), and Node's errnos.
    if (/^SQLITE_(FULL|READONLY)/.test(code) || /^(ENOSPC|EROFS|EDQUOT)$/.test(code)) {
      return new StoreUnavailableError(code);
    }
    // SQLite reports most write failures of a full disk as SQLITE_FULL; the I/O errors it may give instead
    // (a failed write or fsync of the WAL) say nothing about the cause, so they count only with ENOSPC.
    const message = String((error as Error).message);
    if (code.startsWith('SQLITE_IOERR') && /ENOSPC|no space|disk is full/i.test(message)) {
      return new StoreUnavailableError(code);
    }
    return null;
  }
}

/** Missing, malformed, invalid, expired or revoked credentials. Never says which. */
export class UnauthorizedError extends problemType(401, 'unauthorized', 'Valid credentials are required') {
  constructor(
    detail = 'Send an API key in X-API-Key or a bearer token in Authorization',
    /** RFC 6750 error code for WWW-Authenticate, when credentials were sent but refused. */
    readonly bearerError?: 'invalid_token',
  ) {
    super(detail);
  }
  override get headers(): Record<string, string> {
    const error = this.bearerError ? `, error="${this.bearerError}"` : '';
    return {
      'WWW-Authenticate': `Bearer realm="observation-service"${error}, ApiKey realm="observation-service"`,
    };
  }
}

/** Valid credentials without the permission the route needs. */
export class ForbiddenError extends problemType(
  403,
  'forbidden',
  'The credentials do not allow this request',
) {
  constructor(
    detail: string,
    readonly requiredScope?: string,
  ) {
    super(detail);
  }
  override get extensions() {
    return this.requiredScope ? { requiredScope: this.requiredScope } : {};
  }
  /** RFC 6750 §3.1: a missing scope is `insufficient_scope`, naming the scope the request needs. */
  override get headers(): Record<string, string> {
    return this.requiredScope
      ? {
          'WWW-Authenticate': `Bearer realm="observation-service", error="insufficient_scope", scope="${this.requiredScope}"`,
        }
      : {};
  }
}

export class TooManyRequestsError extends problemType(429, 'too-many-requests', 'Too many requests') {
  constructor(
    detail: string,
    readonly retryAfterSeconds: number,
  ) {
    super(detail);
  }
  override get headers(): Record<string, string> {
    return { 'Retry-After': String(this.retryAfterSeconds) };
  }
}

/** Well-formed, but it names something that does not exist (a location, a visit): 422, with the fields. */
export class UnprocessableError extends problemType(
  422,
  'unprocessable',
  'The request refers to something that does not exist',
) {
  constructor(readonly errors: FieldError[]) {
    super(errors.map((e) => `${e.path}: ${e.message}`).join('; '));
  }
  override get extensions() {
    return { errors: this.errors };
  }
}

/** What was thrown, as an Error: a rejection or a failed write may carry anything. */
export const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

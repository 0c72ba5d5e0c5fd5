// How the webhook pages word an attempt's outcome: one line a person can act on, never the same fact
// twice ("HTTP 500, 27 ms, HTTP 500" said the status twice and nothing of what the receiver answered).

const reasons: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  410: 'Gone',
  413: 'Content Too Large',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** A status code with its reason phrase, when it is a common one. */
export const httpStatus = (code: number): string => (reasons[code] ? `${code} ${reasons[code]}` : `${code}`);

const oneLine = (text: string, max = 120) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
};

interface AttemptOutcome {
  status: 'succeeded' | 'failed';
  statusCode: number | null;
  error: string | null;
  responseBody?: string | null;
}

/**
 * What happened, in words: the receiver's status and the start of its answer when it answered; what went
 * wrong on the way (a time-out, a refused connection) when it did not.
 */
export const outcomeText = (attempt: AttemptOutcome): string => {
  if (attempt.statusCode === null)
    return attempt.error ? `No answer: ${oneLine(attempt.error)}` : 'No answer';
  const said = attempt.responseBody ? oneLine(attempt.responseBody) : '';
  const error = attempt.error && attempt.error !== `HTTP ${attempt.statusCode}` ? oneLine(attempt.error) : '';
  return [`HTTP ${httpStatus(attempt.statusCode)}`, said && `“${said}”`, error].filter(Boolean).join(' · ');
};

const compact = new Intl.DateTimeFormat(undefined, {
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});

/** A time short enough for a table cell on a phone. */
export const shortTime = (at: string): string => compact.format(new Date(at));

/** A success rate as a percentage, or a dash before any attempt. */
export const percent = (rate: number | null): string =>
  rate === null ? '—' : `${Math.round(rate * 1000) / 10}%`;

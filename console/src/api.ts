// Every call of the console to the API: the credential goes in a header, problems (RFC 9457) come back as
// ApiProblem with their `detail`, and a user's access token is refreshed once when it has expired.
import { ApiProblem, base } from './base.js';
import { session, type Credential } from './session.js';

export { ApiProblem, base };

const authHeaders = (credential: Credential | null): Record<string, string> => {
  if (!credential) return {};
  return credential.kind === 'apiKey'
    ? { 'X-API-Key': credential.key }
    : { Authorization: `Bearer ${credential.accessToken}` };
};

const problemOf = async (response: Response): Promise<ApiProblem> => {
  const type = response.headers.get('content-type') ?? '';
  if (type.includes('json')) {
    const body = (await response.json()) as { title?: string; detail?: string } & Record<string, unknown>;
    const title = body.title ?? response.statusText;
    return new ApiProblem(response.status, title, body.detail ?? title, body);
  }
  return new ApiProblem(response.status, response.statusText, `HTTP ${response.status}`);
};

export interface CallInit {
  method?: string;
  body?: unknown;
  raw?: Blob;
  accept?: string;
}

/** A call with the session's credential; anonymous (login, refresh) when there is none. */
export const call = async (path: string, init: CallInit = {}): Promise<Response> => {
  const send = () =>
    fetch(`${base}${path}`, {
      method: init.method ?? 'GET',
      headers: {
        ...authHeaders(session.credential()),
        ...(init.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        ...(init.accept ? { Accept: init.accept } : {}),
      },
      ...(init.raw ? { body: init.raw } : init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });
  let response = await send();
  if (response.status === 401 && (await session.refresh())) response = await send();
  if (!response.ok) throw await problemOf(response);
  return response;
};

export const getJson = async <T>(path: string): Promise<T> => (await (await call(path)).json()) as T;

export const sendJson = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
  const response = await call(path, { method, body });
  return (response.status === 204 ? undefined : await response.json()) as T;
};

/** The tenant's part of a path: `/v1/tenants/{t}`. */
export const tenantPath = (rest: string) => `/v1/tenants/${session.tenantId()}${rest}`;

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

/** A query string of the set values only. */
export const query = (params: Record<string, string | number | undefined | null>) => {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params))
    if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
};

// Which screens the credential may see. A user's token carries its scopes (the `scope` claim); an API key
// does not say, so the console asks the API for the cheapest read of each screen: the API stays the one
// authority, and a key without a scope simply gets its 403 here instead of a screen.
import { ApiProblem, call, tenantPath } from './api.js';
import type { Credential } from './session.js';

export type Screen = 'observations' | 'places' | 'cv' | 'webhooks' | 'audit';

export const screenScopes: Record<Screen, string> = {
  observations: 'observations:read',
  places: 'locations:read',
  cv: 'cv:read',
  webhooks: 'webhooks:manage',
  audit: 'admin',
};

const probes: Record<Screen, string> = {
  observations: '/observations?limit=1',
  places: '/locations?limit=1',
  cv: '/cv-models',
  webhooks: '/webhooks?limit=1',
  audit: '/events?limit=1',
};

const tokenScopes = (token: string): string[] => {
  const payload = token.split('.')[1] ?? '';
  const json = atob(payload.replace(/-/g, '+').replace(/_/g, '/'));
  return String((JSON.parse(json) as { scope?: string }).scope ?? '').split(' ');
};

export type Access = Record<Screen, boolean> & { scopes: string[] };

const screens = Object.keys(screenScopes) as Screen[];

export const accessOf = async (credential: Credential): Promise<Access> => {
  if (credential.kind === 'user') {
    const scopes = tokenScopes(credential.accessToken);
    const allowed = (screen: Screen) => scopes.includes('admin') || scopes.includes(screenScopes[screen]);
    return {
      ...(Object.fromEntries(screens.map((s) => [s, allowed(s)])) as Record<Screen, boolean>),
      scopes,
    };
  }
  const results = await Promise.all(
    screens.map(async (screen) => {
      try {
        await call(tenantPath(probes[screen]));
        return true;
      } catch (error) {
        if (error instanceof ApiProblem && error.status === 403) return false;
        throw error;
      }
    }),
  );
  const access = Object.fromEntries(screens.map((s, i) => [s, results[i]!])) as Record<Screen, boolean>;
  return { ...access, scopes: screens.filter((s) => access[s]).map((s) => screenScopes[s]) };
};

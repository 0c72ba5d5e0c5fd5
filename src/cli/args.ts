import { tenantIdPattern } from '../core/ids.js';
import { ValidationError } from '../core/errors.js';
import { findProjection, projections, type RegisteredProjection } from '../../projections/index.js';
import { UsageError } from './command.js';

/** Checks on flags and names that more than one command takes; a bad one is a UsageError (exit code 2). */

export const requireTenant = (tenant: string | undefined): string => {
  if (!tenant || !tenantIdPattern.test(tenant))
    throw new UsageError('--tenant <id> is required, e.g. --tenant t_01m7…');
  return tenant;
};

export const batchSizeOption = (text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  if (!/^[1-9]\d{0,5}$/.test(text)) throw new UsageError('--batch-size must be a whole number from 1');
  return Number(text);
};

/** Validation errors name body fields; on the command line they should name the flags. */
export const withFlagNames = <T>(flags: Record<string, string>, decode: () => T): T => {
  try {
    return decode();
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new ValidationError(error.errors.map((e) => ({ ...e, path: flags[e.path] ?? e.path })));
  }
};

export const projectionNames = () => projections.map((entry) => entry.projection.name).join(', ');

export const knownProjection = (name: string): RegisteredProjection => {
  const found = findProjection(name);
  if (!found) throw new UsageError(`Unknown projection ${name}; known: ${projectionNames()}`);
  return found;
};

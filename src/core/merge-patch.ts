/** JSON Merge Patch (RFC 7396): objects merge key by key, null removes a key, anything else replaces. */
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Recursive along the patch: its depth is bounded before it gets here (a request body by
 * src/core/json-bounds.ts, free-form fields by their codec). Keys are defined, not assigned, so that a key
 * named `__proto__` is a member like any other instead of replacing the result's prototype.
 */
export const mergePatch = (target: unknown, patch: unknown): unknown => {
  if (!isObject(patch)) return patch;
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else {
      const current = Object.hasOwn(result, key) ? result[key] : undefined;
      Object.defineProperty(result, key, {
        value: mergePatch(current, value),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return result;
};

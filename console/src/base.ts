// What every module may need without a cycle: the page's base path, and the problem type.

/** The path prefix of PUBLIC_URL, which the page names in its `obs-base` meta tag. */
export const base = document.querySelector('meta[name="obs-base"]')?.getAttribute('content') ?? '';

export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(detail || title);
  }
}

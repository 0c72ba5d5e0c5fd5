const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `250ms`, `30s`, `5m`, `2h`, `1d` (or a bare number of milliseconds) into milliseconds. */
export const parseDuration = (text: string): number | undefined => {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!match) return undefined;
  return Math.round(Number(match[1]) * units[match[2] ?? 'ms']!);
};

const sizeUnits: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/** Parses `1mb`, `512kb` or a bare number of bytes. */
export const parseByteSize = (text: string): number | undefined => {
  const match = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?$/i.exec(text.trim());
  if (!match) return undefined;
  return Math.floor(Number(match[1]) * sizeUnits[(match[2] ?? 'b').toLowerCase()]!);
};

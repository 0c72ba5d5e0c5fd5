// What the observation screens say in words, as plain functions: a position rounded for reading, the
// attribute that names what was seen, the labels of the latest detections, and what changed between two
// versions of an observation.

export interface Position {
  lat: number;
  lon: number;
}

/** Four decimals (about 11 m): "44.2300, 7.1200", never "44.230000000000004". */
export const positionText = (position: Position | null, decimals = 4): string => {
  // A value that rounds to zero is written "0.0000", not "-0.0000".
  const fixed = (degrees: number) => (Number(degrees.toFixed(decimals)) || 0).toFixed(decimals);
  return position ? `${fixed(position.lat)}, ${fixed(position.lon)}` : '—';
};

/** The attributes that name what was seen, in the order they are looked for. */
export const mainAttributeKeys = ['species', 'taxon', 'label', 'name'] as const;

/** A short value as text: strings as they are, numbers and booleans written out, nothing for objects. */
const shortText = (value: unknown): string | null => {
  if (typeof value === 'string') return value.trim() === '' ? null : value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return null;
};

/** The first well-known attribute with a short value, as `{key, text}`, or null. */
export const mainAttribute = (
  attributes: Record<string, unknown>,
  keys: readonly string[] = mainAttributeKeys,
): { key: string; text: string } | null => {
  for (const key of keys) {
    const text = Object.hasOwn(attributes, key) ? shortText(attributes[key]) : null;
    if (text !== null) return { key, text };
  }
  return null;
};

/** An attribute's value as the observation screen lists it: text as it is, other values as JSON. */
export const attributeText = (value: unknown): string =>
  typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));

/** "horse ×3, person": each label once, with its count when more than one. */
export const labelsText = (labels: readonly { label: string; count: number }[]): string =>
  labels.map(({ label, count }) => (count > 1 ? `${label} ×${count}` : label)).join(', ');

/** The great-circle distance in metres (haversine on a sphere of the Earth's mean radius). */
export const metresBetween = (a: Position, b: Position): number => {
  const radians = (degrees: number) => (degrees * Math.PI) / 180;
  const dLat = radians(b.lat - a.lat);
  const dLon = radians(b.lon - a.lon);
  const h =
    Math.sin(dLat / 2) ** 2 + Math.cos(radians(a.lat)) * Math.cos(radians(b.lat)) * Math.sin(dLon / 2) ** 2;
  return 2 * 6_371_008.8 * Math.asin(Math.min(1, Math.sqrt(h)));
};

/** "12 m", "1.3 km". */
export const distanceText = (metres: number): string =>
  metres < 1000 ? `${Math.round(metres)} m` : `${Number((metres / 1000).toPrecision(2))} km`;

/** A value as the history shows it: strings quoted, long ones cut, objects as JSON. */
export const valueText = (value: unknown, max = 60): string => {
  const text = typeof value === 'string' ? `'${value}'` : (JSON.stringify(value) ?? String(value));
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
};

/** What a version's diff reads: the parts of an observation a user changes. */
export interface Versioned {
  observedAt: string;
  position: Position | null;
  locationId: string | null;
  visitId: string | null;
  notes: string | null;
  attributes: Record<string, unknown>;
  media: readonly { id: string; width: number; height: number }[];
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** "notes: 'a' → 'b'", "notes set: 'b'", "notes cleared (was 'a')". */
const fieldChange = (name: string, before: unknown, after: unknown): string | null => {
  if (same(before, after)) return null;
  if (before === null || before === undefined) return `${name} set: ${valueText(after)}`;
  if (after === null || after === undefined) return `${name} cleared (was ${valueText(before)})`;
  return `${name}: ${valueText(before)} → ${valueText(after)}`;
};

const attributeChanges = (before: Record<string, unknown>, after: Record<string, unknown>): string[] => {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  return keys.flatMap((key) => {
    const name = `attributes.${key}`;
    if (!Object.hasOwn(before, key)) return [`${name} added: ${valueText(after[key])}`];
    if (!Object.hasOwn(after, key)) return [`${name} removed (was ${valueText(before[key])})`];
    const change = fieldChange(name, before[key], after[key]);
    return change ? [change] : [];
  });
};

const positionChange = (before: Position | null, after: Position | null): string | null => {
  if (same(before, after)) return null;
  if (!before) return `position set: ${positionText(after)}`;
  if (!after) return `position cleared (was ${positionText(before)})`;
  return `position moved by ${distanceText(metresBetween(before, after))} to ${positionText(after)}`;
};

/**
 * What changed from one version to the next, a line per field: the history says what each event did,
 * not only its type. The first version (no `before`) is the recording itself.
 */
export const versionChanges = (before: Versioned | null, after: Versioned): string[] => {
  if (!before) return ['recorded'];
  const lines = [
    fieldChange('observed at', before.observedAt, after.observedAt),
    positionChange(before.position, after.position),
    fieldChange('location', before.locationId, after.locationId),
    fieldChange('visit', before.visitId, after.visitId),
    fieldChange('notes', before.notes, after.notes),
  ].filter((line): line is string => line !== null);
  const known = new Set(before.media.map((m) => m.id));
  const added = after.media
    .filter((m) => !known.has(m.id))
    .map((m) => `image ${m.id} added (${m.width} × ${m.height})`);
  return [...lines, ...attributeChanges(before.attributes, after.attributes), ...added];
};

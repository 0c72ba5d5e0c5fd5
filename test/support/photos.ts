import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The photographs kept in the repository (test/fixtures/photos/README.md says whose and on what terms). */
export const fixturePhoto = (name: 'astronaut' | 'chelsea' | 'coffee'): Buffer =>
  readFileSync(new URL(`../fixtures/photos/${name}.jpg`, import.meta.url));

/**
 * The folder of darknet's sample photographs (dog.jpg, horses.jpg, person.jpg…): DARKNET_DATA, the
 * installed package's, or the copy `.ci/run` unpacks into .cache/darknet; null when none is there.
 */
export const darknetPhotos = (): string | null => {
  const candidates = [
    process.env.DARKNET_DATA,
    '/usr/share/darknet/data',
    join(process.cwd(), '.cache/darknet/usr/share/darknet/data'),
  ];
  return candidates.find((dir) => dir !== undefined && existsSync(join(dir, 'dog.jpg'))) ?? null;
};

/** A box in 0..1 of the image, as the results carry them. */
export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export const intersectionOverUnion = (a: Box, b: Box): number => {
  const width = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
  const height = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
  if (width <= 0 || height <= 0) return 0;
  const overlap = width * height;
  return overlap / (a.width * a.height + b.width * b.height - overlap);
};

/** A box from pixel corners in an image of the given size. */
export const pixelBox = (
  size: { width: number; height: number },
  x1: number,
  y1: number,
  x2: number,
  y2: number,
) => ({
  x: x1 / size.width,
  y: y1 / size.height,
  width: (x2 - x1) / size.width,
  height: (y2 - y1) / size.height,
});

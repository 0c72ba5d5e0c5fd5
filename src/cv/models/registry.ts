import { imageQuality } from './image-quality.js';
import { objectProposals } from './object-proposals.js';
import type { CvModel } from './port.js';
import { remoteModel, type RemoteModelSetting } from './remote.js';

export const builtinModels: readonly CvModel[] = [imageQuality, objectProposals];

export interface ModelRegistry {
  /** Every model, built-in first, then remote in the order configured. */
  list(): readonly CvModel[];
  get(name: string): CvModel | undefined;
}

/** The built-in models and the configured remote ones; `extra` lets tests add models of their own. */
export const modelRegistry = (
  remote: readonly RemoteModelSetting[] = [],
  extra: readonly CvModel[] = [],
): ModelRegistry => {
  const models = [...builtinModels, ...remote.map(remoteModel), ...extra];
  const byName = new Map(models.map((model) => [model.name, model]));
  if (byName.size !== models.length) throw new Error('Two CV models have the same name');
  return { list: () => models, get: (name) => byName.get(name) };
};

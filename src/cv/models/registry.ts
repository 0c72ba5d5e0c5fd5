import { imageQuality } from './image-quality.js';
import { objectProposals } from './object-proposals.js';
import type { CvModel } from './port.js';
import type { Logger } from 'pino';
import { jsonRemoteModel, type RemoteModelSetting } from './remote.js';
import { tensorModel } from './tensor.js';

export const builtinModels: readonly CvModel[] = [imageQuality, objectProposals];

export interface ModelRegistry {
  /** Every model, built-in first, then remote in the order configured. */
  list(): readonly CvModel[];
  get(name: string): CvModel | undefined;
}

/** A configured remote model, of either protocol (src/cv/models/remote.ts). */
export const remoteModel = (setting: RemoteModelSetting, logger?: Logger): CvModel =>
  setting.protocol === 'tensor' ? tensorModel(setting, logger) : jsonRemoteModel(setting);

/**
 * The built-in models and the configured remote ones; `extra` lets tests add models of their own. The
 * logger hears of remote models whose server does not match their configuration.
 */
export const modelRegistry = (
  remote: readonly RemoteModelSetting[] = [],
  extra: readonly CvModel[] = [],
  logger?: Logger,
): ModelRegistry => {
  const models = [...builtinModels, ...remote.map((setting) => remoteModel(setting, logger)), ...extra];
  const byName = new Map(models.map((model) => [model.name, model]));
  if (byName.size !== models.length) throw new Error('Two CV models have the same name');
  return { list: () => models, get: (name) => byName.get(name) };
};

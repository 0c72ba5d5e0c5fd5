import { imageQuality } from './image-quality.js';
import { objectProposals } from './object-proposals.js';
import { objectsCoco, type ObjectsCocoSettings } from './objects-coco.js';
import type { CvModel } from './port.js';
import type { Logger } from 'pino';
import { jsonRemoteModel } from './remote.js';
import type { RemoteModelSetting } from './remote-settings.js';
import { tensorModel } from './tensor.js';

/** The models built into the service, in the order `GET .../cv-models` lists them. */
export const builtinModels = (detector: ObjectsCocoSettings): readonly CvModel[] => [
  imageQuality,
  objectsCoco(detector),
  objectProposals,
];

export interface ModelRegistry {
  /** Every model, built-in first, then remote in the order configured. */
  list(): readonly CvModel[];
  get(name: string): CvModel | undefined;
  /** Releases what the models hold (the detector's threads). */
  close(): Promise<void>;
}

/** A configured remote model, of either protocol (src/cv/models/remote.ts). */
export const remoteModel = (setting: RemoteModelSetting, logger?: Logger): CvModel =>
  setting.protocol === 'tensor' ? tensorModel(setting, logger) : jsonRemoteModel(setting);

export interface RegistrySettings {
  remote?: readonly RemoteModelSetting[];
  /** The built-in detector's threads and weights; one thread and the installed weights by default. */
  detector?: ObjectsCocoSettings;
  /** Models of the tests' own. */
  extra?: readonly CvModel[];
  /** Hears of remote models whose server does not match their configuration. */
  logger?: Logger;
}

/** The built-in models and the configured remote ones. */
export const modelRegistry = ({
  remote = [],
  detector = { threads: 1 },
  extra = [],
  logger,
}: RegistrySettings = {}): ModelRegistry => {
  const models = [
    ...builtinModels(detector),
    ...remote.map((setting) => remoteModel(setting, logger)),
    ...extra,
  ];
  const byName = new Map(models.map((model) => [model.name, model]));
  if (byName.size !== models.length) throw new Error('Two CV models have the same name');
  return {
    list: () => models,
    get: (name) => byName.get(name),
    close: async () => {
      await Promise.all(models.map((model) => (model.close ? model.close() : Promise.resolve())));
    },
  };
};

import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { builtinModelNames } from '../cv/models/port.js';
import { parseRemoteModelSettings, type RemoteModelSetting } from '../cv/models/remote-settings.js';
import { countSetting, declare, namedSettings, positiveCount, positiveDurationSetting } from './declare.js';

const remoteModels = (json: string): RemoteModelSetting[] =>
  parseRemoteModelSettings(JSON.parse(json), builtinModelNames);

/** CV jobs: time-outs, concurrency, and the models. */
export const cvSettings = namedSettings({
  CV_JOB_TIMEOUT: positiveDurationSetting('60s', 'longest run of a CV job before it fails with `timeout`'),
  CV_CONCURRENCY: countSetting('4', 'CV jobs one instance runs at once'),
  CV_WORKERS: declare({
    default: 'auto',
    defaultShown: 'auto: the cores less one, at least 1',
    expected: 'auto or a positive whole number',
    description:
      'threads running the built-in detector (objects-coco), each holding its model (about 100 MB; docs/operations.md)',
    parse: (s) => (s === 'auto' ? Math.max(1, availableParallelism() - 1) : positiveCount(s)),
  }),
  CV_DETECTOR_WEIGHTS_DIR: declare({
    default: null,
    defaultShown: 'the installed @vladmandic/human package',
    expected: 'a folder holding centernet.json and centernet.bin',
    description:
      "where objects-coco's weights are read from; their SHA-256 must match (a copy of the package's files, for a read-only image)",
    echo: 'path',
    parse: (s) => s,
  }),
  CV_REMOTE_MODELS: declare({
    default: null,
    defaultShown: 'none',
    expected: 'a JSON list of {"name", "url", "timeout", "protocol": "json" or "tensor", …}',
    description:
      'models behind inference servers (Open Inference Protocol: our JSON contract, or YOLO tensors on Triton or KServe; docs/api.md), the same in every process on the store but for url and timeout; not with CV_MODELS_FILE',
    echo: 'never',
    parse: remoteModels,
  }),
  CV_MODELS_FILE: declare({
    default: null,
    defaultShown: 'none',
    expected: 'the path of a file holding the JSON of CV_REMOTE_MODELS',
    description: 'the same JSON in a file, instead of CV_REMOTE_MODELS',
    echo: 'path',
    parse: (path) => remoteModels(readFileSync(path, 'utf8')),
  }),
});

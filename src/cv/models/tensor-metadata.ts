import { inputShape } from './tensor-input.js';
import type { TensorSetting } from './tensor-settings.js';

/**
 * The configuration of a tensor model against what its server says of it (`GET /v2/models/{name}`:
 * `{name, versions?, platform, inputs: [{name, datatype, shape}], outputs: [...]}`). A dimension of -1 is
 * variable (Triton's batch dimension); a server may also leave the batch dimension out.
 */

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
}

const tensors = (value: unknown): TensorMetadata[] | undefined =>
  Array.isArray(value) &&
  value.every(
    (t) =>
      isObject(t) &&
      typeof t.name === 'string' &&
      typeof t.datatype === 'string' &&
      Array.isArray(t.shape) &&
      t.shape.every((d) => typeof d === 'number' && Number.isInteger(d)),
  )
    ? (value as TensorMetadata[])
    : undefined;

const text = (shape: readonly number[]) => `[${shape.join(', ')}]`;

/** Whether the server's shape fits the expected one, the batch dimension optional and -1 matching anything. */
const fits = (server: readonly number[], expected: readonly (number | null)[]) => {
  const full = server.length === expected.length ? server : [1, ...server];
  return (
    full.length === expected.length &&
    full.every((d, i) => d === -1 || expected[i] === null || d === expected[i])
  );
};

/** What does not match, in a sentence, or undefined when the server's model is what the setting says. */
export const metadataMismatch = (metadata: unknown, setting: TensorSetting): string | undefined => {
  if (!isObject(metadata)) return 'the server sent no model metadata object';
  const inputs = tensors(metadata.inputs);
  const outputs = tensors(metadata.outputs);
  if (!inputs || !outputs)
    return "the server's metadata has no inputs and outputs lists of {name, datatype, shape}";
  const { input, output, labels } = setting;
  const served = inputs.find((t) => t.name === input.name);
  if (!served)
    return `the server's model has no input named ${input.name} (its inputs: ${inputs.map((t) => t.name).join(', ') || 'none'})`;
  if (served.datatype !== input.datatype)
    return `input ${input.name} is ${served.datatype} on the server, not ${input.datatype} as configured`;
  const wanted = inputShape(input);
  if (!fits(served.shape, wanted))
    return `input ${input.name} has shape ${text(served.shape)} on the server, not ${text(wanted)} (${input.width}×${input.height} ${input.layout}) as configured`;
  const answer = outputs.find((t) => t.name === output.name);
  if (!answer)
    return `the server's model has no output named ${output.name} (its outputs: ${outputs.map((t) => t.name).join(', ') || 'none'})`;
  if (!['FP32', 'FP16', 'FP64'].includes(answer.datatype))
    return `output ${output.name} is ${answer.datatype} on the server; a ${output.format} output is floating point`;
  const classes = labels.length;
  const matches =
    output.format === 'yolov5'
      ? fits(answer.shape, [1, null, 5 + classes])
      : fits(answer.shape, [1, 4 + classes, null]) ||
        // Transposed only when the server says so: a variable last dimension is the usual N.
        (answer.shape.at(-1) === 4 + classes && fits(answer.shape, [1, null, 4 + classes]));
  if (!matches)
    return `output ${output.name} has shape ${text(answer.shape)} on the server, not ${output.format === 'yolov5' ? `[1, N, ${5 + classes}]` : `[1, ${4 + classes}, N]`} for ${classes} labels`;
  return undefined;
};

// rumedbench runs encoders through onnxruntime-node; nothing here is ever called.
export const env = { wasm: {}, webgpu: {} };
export const InferenceSession = undefined;
export const Tensor = undefined;
export default { env };

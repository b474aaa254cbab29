// The WASM kernel module: every export takes byte addresses into one shared memory (see src/tensor/wasm-backend.ts).
export { gemm, gemmBatched, gemmNT, gemmNTBatched, gemmScratchBytes } from './gemm';
export { binary, reduceBroadcast, unary, unaryBackward, affine, axpy, copyBlock, permute4, sumAxis, expandAxis, fill, swiglu, swigluBackward, adamw, sumSquares, allFinite } from './elementwise';
export { rmsNorm, rmsNormBackward, rope, softmax, softmaxBackward, logprobTarget, logprobTargetBackward, entropy, entropyBackward, embedding, embeddingBackward } from './nn';
export { attention, attentionBackward, attentionScratchBytes } from './attention';
export { decodePack, decodeStep } from './decode'; // decodeStep runs decodeLayer and decodeHead inside the module
export { fmaProbe } from './probe';

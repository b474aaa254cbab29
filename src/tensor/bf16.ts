// bf16 frozen matrices in native memory (native/memory.cc, native/bf16.cc): a LoRA base or a reference model's
// projections kept as bfloat16 in native blocks of their own beside the tensor arena, and `linearBf16`, the float32-activation product
// with them (gradients flow to x and the bias, never to the frozen matrix). Native backend only.
import { ConfigError, ShapeError } from '../util/index.js';
import { getBackend } from './backends.js';
import type { Backend } from './backend.js';
import { NativeBackend } from './native-backend.js';
import { add } from './ops.js';
import { Tensor, attach } from './tensor.js';

/** The bf16 GEMM paths, in the addon's numbering (`auto` = the best this CPU has). */
export const BF16_PATHS = ['auto', 'scalar', 'avx2', 'avx512', 'avx512bf16'] as const;
export type Bf16Path = (typeof BF16_PATHS)[number];

function native(backend: Backend): NativeBackend {
  if (!(backend instanceof NativeBackend))
    throw new ConfigError(
      `bf16 weights live in native memory and need the native backend, but the current backend is \`${backend.name}\`; build the addon (npm run build) and use backend native`,
    );
  return backend;
}

/** The bf16 paths this CPU can run (scalar always; avx2, avx512, avx512bf16 when present). */
export function bf16Paths(backend: Backend = getBackend()): Bf16Path[] {
  return native(backend).addon.bf16Paths().split(' ') as Bf16Path[];
}

/** Bytes in live native blocks (bf16 matrices and any other native memory). */
export function nativeAllocatedBytes(backend: Backend = getBackend()): number {
  return native(backend).addon.nativeAllocated();
}

/** A frozen (rows, cols) matrix stored row-major as bf16 in one native block. */
export class Bf16Matrix {
  private address: number;

  private constructor(
    readonly backend: NativeBackend,
    readonly rows: number,
    readonly cols: number,
  ) {
    if (!(Number.isInteger(rows) && Number.isInteger(cols) && rows > 0 && cols > 0))
      throw new ShapeError(`Bf16Matrix: shape [${rows}, ${cols}] must be two positive integers`);
    this.address = backend.addon.nativeAlloc(rows * cols * 2);
  }

  /** A zeroed matrix (its pages cost memory only once written). */
  static zeros(rows: number, cols: number, backend: Backend = getBackend()): Bf16Matrix {
    return new Bf16Matrix(native(backend), rows, cols);
  }

  /** `data` (rows * cols float32, row-major) rounded to bf16 (nearest even). */
  static fromFloat32(data: Float32Array, rows: number, cols: number, backend: Backend = getBackend()): Bf16Matrix {
    if (data.length !== rows * cols)
      throw new ShapeError(`Bf16Matrix: ${data.length} values do not fill [${rows}, ${cols}]`);
    const m = new Bf16Matrix(native(backend), rows, cols);
    m.writeRows(0, data);
    return m;
  }

  get shape(): [number, number] {
    return [this.rows, this.cols];
  }

  /** The native block's address (for kernels). */
  get ptr(): number {
    if (this.address < 0) throw new Error('Bf16Matrix: used after dispose()');
    return this.address;
  }

  /** Overwrite whole rows from `row` on with float32 values (rounded) or raw bf16 bits (Uint16Array, as stored). */
  writeRows(row: number, data: Float32Array | Uint16Array): void {
    const rows = data.length / this.cols;
    if (!Number.isInteger(rows) || row < 0 || row + rows > this.rows)
      throw new ShapeError(
        `Bf16Matrix.writeRows: ${data.length} values from row ${row} do not fit [${this.rows}, ${this.cols}] in whole rows`,
      );
    const offset = row * this.cols * 2;
    if (data instanceof Float32Array) this.backend.addon.bf16Store(this.ptr, offset, data);
    else this.backend.addon.nativeCopy(this.ptr, offset, data, 1);
  }

  /** Rows [row, row + count) as float32 (exact: every bf16 value is a float32). */
  readRows(row = 0, count = this.rows - row): Float32Array {
    if (row < 0 || count < 0 || row + count > this.rows)
      throw new ShapeError(`Bf16Matrix.readRows: rows ${row}..${row + count} are outside [${this.rows}, ${this.cols}]`);
    const out = new Float32Array(count * this.cols);
    this.backend.addon.bf16Load(this.ptr, row * this.cols * 2, out);
    return out;
  }

  /** Free the native block. */
  dispose(): void {
    if (this.address < 0) return;
    this.backend.addon.nativeFree(this.address);
    this.address = -1;
  }
}

/**
 * y = x w^T + bias for a frozen bf16 w (out, in) and float32 x (..., in) -> (..., out), as `linear`; the backward
 * gives x (and the bias) their gradients. `path` forces one GEMM path (tests); a path this CPU lacks is a RangeError.
 */
export function linearBf16(x: Tensor, w: Bf16Matrix, bias?: Tensor | null, path: Bf16Path = 'auto'): Tensor {
  const [N, K] = w.shape;
  if (x.shape[x.ndim - 1] !== K)
    throw new ShapeError(`linearBf16: x [${x.shape}] does not fit bf16 weight [${N}, ${K}] (expected x (..., ${K}))`);
  const be = native(x.backend);
  if (be !== w.backend) throw new ConfigError('linearBf16: x and the bf16 weight belong to different backends');
  const code = BF16_PATHS.indexOf(path);
  if (code < 0) throw new ConfigError(`linearBf16: unknown path \`${path}\`; valid: ${BF16_PATHS.join(', ')}`);
  const M = x.size / K;
  const y = Tensor.empty([...x.shape.slice(0, -1), N], be);
  be.gemmBf16(code, true, M, N, K, x.buf, w.ptr, y.buf, false);
  const out = attach(y, 'linearBf16', [x], (g) => {
    const gx = Tensor.empty(x.shape, be);
    be.gemmBf16(code, false, M, K, N, g.buf, w.ptr, gx.buf, false); // (M, out) (out, in)
    return [gx];
  });
  if (!bias) return out;
  const withBias = add(out, bias);
  if (!out.requiresGrad) out.dispose();
  return withBias;
}

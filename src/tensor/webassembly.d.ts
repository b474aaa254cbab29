// The slice of the WebAssembly JS API the kernels use (the project's lib setting has no DOM types).
declare namespace WebAssembly {
  class Module {
    constructor(bytes: ArrayBufferView | ArrayBuffer);
    static exports(module: Module): { name: string; kind: string }[];
    static imports(module: Module): { module: string; name: string; kind: string }[];
  }
  class Instance {
    constructor(module: Module, imports?: Record<string, Record<string, unknown>>);
    readonly exports: Record<string, unknown>;
  }
  class Memory {
    constructor(descriptor: { initial: number; maximum?: number; shared?: boolean });
    readonly buffer: ArrayBuffer | SharedArrayBuffer;
    grow(deltaPages: number): number;
  }
  function compile(bytes: ArrayBufferView | ArrayBuffer): Promise<Module>;
  function validate(bytes: ArrayBufferView | ArrayBuffer): boolean;
}

{
  "targets": [
    {
      "target_name": "ragen_native",
      "sources": ["ragen.cc", "gemm.cc", "memory.cc", "bf16.cc", "nn.cc", "attention.cc", "ops.cc"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-O3", "-mavx2", "-mfma", "-mf16c", "-std=c++17"]
    }
  ]
}

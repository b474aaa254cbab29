{
  "targets": [
    {
      "target_name": "ragen_native",
      "sources": ["ragen.cc", "memory.cc", "bf16.cc"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-O3", "-march=native", "-std=c++17"],
      "conditions": [
        ["'<!(node -p \"process.env.RAGEN_NATIVE_BLAS !== '0' && (require('fs').existsSync('/usr/include/x86_64-linux-gnu/cblas.h') || require('fs').existsSync('/usr/include/cblas.h') || require('fs').existsSync('/usr/include/openblas/cblas.h')) ? 1 : 0\")'=='1'", {
          "defines": ["RAGEN_HAVE_CBLAS=1"],
          "include_dirs": ["/usr/include/openblas", "/usr/include/x86_64-linux-gnu"],
          "libraries": ["-lopenblas"]
        }, {
          "defines": ["RAGEN_HAVE_CBLAS=0"]
        }]
      ]
    }
  ]
}

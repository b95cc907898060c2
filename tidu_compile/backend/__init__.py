"""Native-code backend: lowering to the llvm dialect, LLVM compilation and the JIT."""

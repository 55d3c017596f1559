"""Code generators: LLVM (CPU hosts and cross targets)."""

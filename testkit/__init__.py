"""The test and benchmark programs and fuzzers: the reference instruction tests re-created with
the builder (`examples`), a conv-like Program (`programs`), seeded random valid Programs
(`program_fuzz`), the compiler's fuzzing cases (`compiler_fuzz`) and the child process that runs
untrusted inputs (`fuzzworker`). Like `benchmarks/`, a top-level package that is not installed:
the tests find it through pytest's `pythonpath` (`.`), the benchmark scripts through
`scripts/_bench_path.py`; nothing in `vta/`, `sim/`, `hw/` or `compiler/` imports it."""

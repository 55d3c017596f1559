"""The benchmarks' logic, behind the entry points in `scripts/bench_*.py`: each measures ours and
its peer in the same run and returns figures that the scripts print as tables or JSON.

`harness` (timing, foreign load, source version), `peers` (numpy/OpenBLAS in a subprocess, a
one-node onnxruntime Conv), `cpu` (operators against numpy and onnxruntime), `tuned` (tuned
kernels against the same peers), `vta` (ResNet-18 layers on the accelerator), `search` (the
model-guided tuner against random search on measured wall time). The tuner study is
`compiler.tune.study`; the simulator and RTL benchmarks are `hw.bench`.
"""

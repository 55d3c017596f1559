"""The benchmarks' logic, behind the entry points in `scripts/bench_*.py`: each measures ours and
its peer in the same run and returns figures that the scripts print as tables or JSON. This
package is not installed and nothing in vta/, sim/, hw/ or compiler/ imports it; the scripts put
the repository root on `sys.path` (`scripts/_bench_path.py`), the tests through pytest's
`pythonpath`.

`harness` (timing, foreign load, source version), `peers` (numpy/OpenBLAS in a subprocess, a
one-node onnxruntime Conv), `hostisa` (`--hide-avx512`), `cpu` (operators against numpy and
onnxruntime), `tuned` (tuned kernels against the same peers), `models` (whole networks against
onnxruntime), `vta`, `vta_accuracy` (the accelerator's layers, networks and
accuracy), `ansor` (the auto-scheduler), `search` (the model-guided tuner against random search
on measured wall time), `study` + `study_report` (the tuner study), `gpu` (GPU kernels), `rtl`
(the RTL and the simulators).
"""

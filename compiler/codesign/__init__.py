"""Hardware/software co-design: accelerator configurations searched with the compiler in the
loop (`vta codesign`).

A design point (`space.Point`) is a GEMM shape, the on-chip buffers' depths, the memory bus and
the ALU options; it becomes a `VTAConfig` for a target part. Its cost (`evaluate`) is the
network compiled for it (knobs chosen on the timing-only simulator), its resources and clock
(`hw.resources`, fitted to yosys) and its energy (`energy`: counted events times a table).
`search` finds the Pareto front of latency against LUTs (or energy-delay), learned against random
and grid baselines; `store` keeps every evaluated point in SQLite so a search resumes.
"""

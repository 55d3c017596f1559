"""`vta codesign`'s table of the Pareto front and its plot of latency against LUTs."""

from __future__ import annotations

from hw.parts import part_for

from .api import Result
from .evaluate import Evaluation


def _row(ev: Evaluation, verified: bool | None, mark: str) -> list[str]:
    p, u = ev.point, ev.utilisation or {}
    buffers = "/".join(f"{1 << d}" for d in (p.inp_depth, p.wgt_depth, p.acc_depth, p.uop_depth))

    def share(key: str) -> str:
        return f"{100 * u[key]:.0f}%" if key in u else "-"

    def number(value, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    check = {True: "yes", False: "NO", None: "-"}[verified]
    return [
        mark + p.label,
        p.shape,
        buffers,
        str(p.bus),
        number(ev.cycles, ","),
        f"{ev.fmax_mhz:.0f}",
        f"{ev.clock_mhz:g}",
        number(ev.latency_ms, ".3f"),
        number(ev.board_ms, ".2f"),
        share("LUT"),
        share("FF"),
        share("BRAM36"),
        share("DSP"),
        number(ev.energy_mj, ".2f"),
        "yes" if ev.fits else "no",
        check,
    ]


HEADER = ["config", "GEMM", "depth i/w/a/u", "bus", "cycles", "Fmax", "MHz", "latency ms",
          "board ms", "LUT", "FF", "BRAM36", "DSP", "energy mJ", "fits", "sim exact"]  # fmt: skip


def _line(cells: list[str], widths: list[int]) -> str:
    """The first column left-aligned, the others right-aligned."""
    pairs = enumerate(zip(cells, widths, strict=True))
    return "  ".join(c.rjust(w) if k else c.ljust(w) for k, (c, w) in pairs)


def table(result: Result, objective: str) -> str:
    """The preset's row, then the front's (`*` marks the best by the objective)."""
    best = result.best.point.label if result.best else None
    rows = [_row(result.default, result.verified.get(result.default.point.label), "preset ")]
    rows += [
        _row(ev, result.verified.get(ev.point.label), "* " if ev.point.label == best else "  ")
        for ev in result.pareto
    ]
    widths = [max(len(r[k]) for r in [HEADER, *rows]) for k in range(len(HEADER))]
    lines = [_line(r, widths) for r in [HEADER, *rows]]
    evaluated = len(result.evaluations)
    failed = sum(ev.error is not None for ev in result.evaluations)
    summary = f"{evaluated} points evaluated ({failed} did not compile); front of {objective}"
    key = "board_ms" if objective == "board" else "latency_ms"
    before, after = (getattr(ev, key) if ev else None for ev in (result.default, result.best))
    if before and after:
        what = "board latency" if objective == "board" else "latency"
        summary += f"; best {result.best.point.label}: {before / after:.2f}x the preset's {what}"
    return "\n".join([*lines, summary])


def plot_front(result: Result, path: str, part: str, objective: str = "latency") -> None:
    """Latency (of the offloaded work, or `board`: one inference on the board) against LUTs:
    every fitting point, the front drawn, the preset marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    capacity = part_for(part).lut
    fig, ax = plt.subplots(figsize=(7, 4.5))

    def ms(ev: Evaluation) -> float | None:
        return ev.board_ms if objective == "board" else ev.latency_ms

    ok = [ev for ev in result.evaluations if ev.ok and ms(ev) is not None]
    ax.scatter([100 * ev.lut / capacity for ev in ok], [ms(ev) for ev in ok], s=12,
               color="0.6", label="evaluated")  # fmt: skip
    front = sorted(result.pareto, key=lambda ev: ev.lut)
    ax.step([100 * ev.lut / capacity for ev in front], [ms(ev) for ev in front],
            where="post", color="C0", marker="o", label="Pareto front")  # fmt: skip
    d = result.default
    if ms(d) is not None:
        ax.scatter([100 * d.lut / capacity], [ms(d)], marker="*", s=160, color="C3",
                   label=f"preset ({d.clock_mhz:g} MHz)", zorder=3)  # fmt: skip
    ax.set_xlabel(f"LUTs (% of {part})")
    what = "one inference on the board" if objective == "board" else "the offloaded work"
    ax.set_ylabel(f"latency of {what} (ms)")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)

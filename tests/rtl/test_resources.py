"""The resource model (hw/resources.py) against the dataset of yosys runs (hw/data/): BRAM36 and
DSP counts equal yosys's on every run; LUT, FF and Fmax predicted within 10% (mean absolute
error on held-out runs); the committed coefficients are what a refit of the committed data
gives; the fit rules; and fresh yosys runs of the tiny preset and of cores whose BLOCK_OUT
differs from BLOCK_IN agree with the model."""

import json
import math
import shutil

import pytest

from hw import resource_fit, resources
from hw.synth_data import load
from testkit.examples import unequal_blocks
from vta.config import VTAConfig
from vta.errors import ConfigError

RUNS = load()
GOAL_PCT = 10.0  # mean absolute error on held-out runs


def same_fit(a, b) -> bool:
    """Equal models, coefficients to 1e-9 relatively (least squares' last digits follow the
    host's BLAS kernels: an AVX2 host and an AVX-512 one differ there)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_fit(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same_fit, a, b))
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _config(run: dict) -> VTAConfig:
    return VTAConfig.from_dict({**run["config"], "name": "run"})


def test_the_dataset_covers_both_families():
    families = [run["family"] for run in RUNS]
    assert families.count("xc7") >= 30 and families.count("xcup") >= 3, families


@pytest.mark.parametrize("run", RUNS, ids=lambda r: f"{r['config_string']}-{r['family']}")
def test_bram_and_dsp_counts_equal_yosys(run):
    cfg = _config(run)
    assert resources.bram36(cfg, run["family"]) == run["bram36"]
    assert resources.dsps(cfg, run["family"]) == run["dsp"]


def test_held_out_errors_are_within_the_goal():
    errors = resource_fit.held_out_errors(RUNS)
    print(json.dumps(errors, indent=1))
    for target in ("lut", "ff", "fmax_mhz"):
        xc7 = errors[target]["xc7"]
        assert xc7["runs"] == sum(r["family"] == "xc7" for r in RUNS)
        assert xc7["mae_pct"] <= GOAL_PCT, (target, xc7)


def test_the_committed_model_is_the_refit_of_the_committed_data(tmp_path):
    """`python -m hw.resource_fit` on the data reproduces hw/data/resource_model.json."""
    out = tmp_path / "model.json"
    assert resource_fit.main(["--model", str(out)]) == 0
    assert same_fit(json.loads(out.read_text()), resources.load_model())


def test_runs_of_unequal_blocks_check_the_model_without_fitting_it(tmp_path):
    """The fit reads the equal-block runs only; the others are the model's extrapolation
    check, each predicted by it (BRAM36 and DSP, counted, exact there too)."""
    every = load()
    beyond = [r for r in every if not resource_fit.fitted(r)]
    assert beyond and all(r["config"]["log_block_out"] is not None for r in beyond)
    model = resources.load_model()
    refit = resource_fit.fit([r for r in every if resource_fit.fitted(r)])
    assert same_fit(model["targets"], refit["targets"])
    assert sum(e["runs"] for e in model["extrapolation"]["lut"].values()) == len(beyond)
    for run in beyond:
        est = resources.estimate(VTAConfig.from_dict({**run["config"], "name": "r"}))
        assert (est.bram36, est.dsp) == (run["bram36"], run["dsp"])


def test_refit_without_data_is_a_one_line_error(tmp_path, capsys):
    args = ["--data", str(tmp_path / "none.json"), "--model", str(tmp_path / "model.json")]
    assert resource_fit.main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "python -m hw.synth_data" in err
    assert not (tmp_path / "model.json").exists()
    assert resource_fit.main(["--folds", "1", "--model", str(tmp_path / "model.json")]) == 1
    assert "--folds 1: cross-validation needs 2 to" in capsys.readouterr().err


def test_estimate_and_fits():
    pynq = resources.estimate(VTAConfig.load("pynq"))
    assert pynq.part == "xc7z020" and pynq.bram36 == 114.5 and pynq.dsp == 132
    assert pynq.fits and 0.5 < pynq.utilisation["LUT"] < 0.85 and pynq.fmax_mhz >= 100
    ultra96 = resources.estimate(VTAConfig.load("ultra96"))
    assert ultra96.part == "xczu3eg" and not ultra96.fits  # 333 MHz is beyond the estimate
    big = VTAConfig.load("pynq").replace(log_block=5, log_batch=1, alu_mul=True)
    assert big.macs_per_cycle == 2048
    on_z7, on_zu = resources.estimate(big), resources.estimate(big, "xczu3eg")
    assert on_z7.utilisation["DSP"] > 1 and not on_z7.fits and not resources.fits(big)
    assert on_zu.dsp == on_z7.dsp and on_zu.utilisation["DSP"] < on_z7.utilisation["DSP"]
    wide = VTAConfig.load("pynq").replace(log_bus_width=7, clock_mhz=50)
    assert not resources.fits(wide) and resources.fits(wide, "xczu3eg")  # 64-bit ACP


def test_bad_input_is_a_one_line_config_error():
    for call in (
        lambda: resources.estimate("pynq"),
        lambda: resources.estimate(VTAConfig.load("pynq"), "xc7a35t"),
        lambda: resources.load_model(resources.MODEL.with_name("missing.json")),
    ):
        with pytest.raises(ConfigError) as err:
            call()
        assert "\n" not in str(err.value)


def test_multipliers_split_as_mul2dsp_splits_them():
    assert resources.multiplier_dsps(8, 25, 33, "xc7", signed=True) == 1  # a GEMM pair
    assert resources.multiplier_dsps(8, 8, 8, "xc7") == 0  # below 9 result bits: LUTs
    assert resources.multiplier_dsps(16, 16, 16, "xc7") == 1
    # 33 x 33 signed: 2 x 2 partial products, the one shifted by 34 bits is dropped
    assert resources.multiplier_dsps(32, 32, 32, "xc7") == 3
    assert resources.multiplier_dsps(32, 32, 64, "xc7") == 4


@pytest.mark.slow
@pytest.mark.rtl
@pytest.mark.skipif(shutil.which("yosys") is None, reason="yosys missing (apt-get install yosys)")
def test_a_fresh_yosys_run_agrees_with_the_model():
    """The smallest design point (about a minute of yosys): BRAM36 and DSP exact, LUT and FF
    within 20% (one run, not a mean), DSPs of the ALU multipliers included."""
    from hw.synth import synthesize
    from hw.synth_data import POINTS, design_point

    cfg = design_point({**POINTS[0], "alu_mul": True, "alu_requant": False}, "xc7")
    totals, _, path, _ = synthesize(cfg, None)
    guess = resources.estimate(cfg)
    assert (guess.bram36, guess.dsp) == (totals["BRAM36"], totals["DSP"])
    for key, value in (("LUT", guess.lut), ("FF", guess.ff), ("fmax", guess.fmax_mhz)):
        want = path.fmax_mhz if key == "fmax" else totals[key]
        assert abs(value - want) <= 0.2 * want, (key, value, want)


def test_unequal_blocks_count_macs_as_batch_block_in_block_out():
    """MACs are BATCH x BLOCK_IN x BLOCK_OUT; ALU lanes, with their multipliers, BLOCK_OUT (the
    GEMM's DSP pairs are checked against yosys below)."""
    for cfg in map(unequal_blocks, ("tiny-8x4", "tiny-4x8")):
        feats = resources.features(cfg, "xc7")
        assert feats["macs"] == cfg.batch * cfg.block_in * cfg.block_out == 32
        assert feats["lanes"] == feats["mul_lanes"] == cfg.block_out
        # one 32-bit multiplier (3 DSP48s) per ALU lane
        without_mul = resources.dsps(cfg.replace(alu_mul=False), "xc7")
        assert resources.dsps(cfg, "xc7") - without_mul == 3 * cfg.block_out


@pytest.mark.slow
@pytest.mark.rtl
@pytest.mark.skipif(shutil.which("yosys") is None, reason="yosys missing (apt-get install yosys)")
@pytest.mark.parametrize("name", ["tiny-4x8", "tiny-8x4"])
def test_a_fresh_yosys_run_of_unequal_blocks_agrees_with_the_model(name):
    """BRAM36 and DSP exact, LUT and FF within 20% (about two minutes of yosys each)."""
    from hw.synth import synthesize

    cfg = unequal_blocks(name)
    totals, _, _, _ = synthesize(cfg, None)
    guess = resources.estimate(cfg)
    assert (guess.bram36, guess.dsp) == (totals["BRAM36"], totals["DSP"])
    for key, value in (("LUT", guess.lut), ("FF", guess.ff)):
        assert abs(value - totals[key]) <= 0.2 * totals[key], (key, value, totals[key])

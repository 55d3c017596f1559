`include "vta_config.vh"
// Store module: executes STORE (OUT buffer -> DRAM) from its command queue; pops g2s, pushes
// s2g (store -> compute): the token queues of vta/isa.py TokenQueue.
module vta_store (
    input  wire                 clk,
    input  wire                 rst,
    // the instruction word also carries fields this module does not read
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [`VTA_INSN_BITS-1:0] insn,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                 insn_valid,
    output wire                 insn_pop,
    input  wire                 g2s_empty,
    output wire                 g2s_pop,
    input  wire                 s2g_full,
    output wire                 s2g_push,
    output reg  [`VTA_COUNTER_KINDS-1:0] act,  // this cycle's kind (docs/timing.md), one-hot
    output wire                 awvalid,
    input  wire                 awready,
    output wire [`VTA_AXI_ADDR_BITS-1:0] awaddr,
    output wire [`VTA_AXI_LEN_BITS-1:0]  awlen,
    output wire                 wvalid,
    input  wire                 wready,
    output wire [`VTA_BUS_BITS-1:0] wdata,
    output wire [`VTA_BUS_BYTES-1:0] wstrb,
    output wire                 wlast,
    input  wire                 bvalid,
    output wire                 bready,
    output wire [`VTA_OUT_BANKS-1:0] out_re,
    output wire [`VTA_OUT_BANKS*`VTA_OUT_BANK_AW-1:0] out_raddr,
    input  wire [`VTA_OUT_BANKS*`VTA_OUT_ELEM_BITS-1:0] out_rdata
);
  localparam integer SIZE_W = `VTA_MEM_X_SIZE_W;
  wire pop_prev = insn[`VTA_MEM_POP_PREV_DEP_LSB];
  wire push_prev = insn[`VTA_MEM_PUSH_PREV_DEP_LSB];
  wire [SIZE_W-1:0] m_ys = insn[`VTA_MEM_Y_SIZE_LSB+:SIZE_W];
  wire [SIZE_W-1:0] m_xs = insn[`VTA_MEM_X_SIZE_LSB+:SIZE_W];
  wire nop = m_xs == 0 || m_ys == 0;
  reg busy, r_push;
  wire done;
  wire tokens = !pop_prev || !g2s_empty;
  wire accept = !busy && insn_valid && tokens && (!push_prev || !s2g_full);
  wire beat = wvalid && wready;
  always @(*) begin
    act = 0;
    act[`VTA_COUNTER_BUSY] = accept || (busy && beat);
    act[`VTA_COUNTER_STALL_DRAM] = busy && !beat;
    act[`VTA_COUNTER_STALL_TOKEN] = !busy && insn_valid && !tokens;
    act[`VTA_COUNTER_STALL_QUEUE] = !busy && insn_valid && tokens && !accept;
  end
  assign insn_pop = accept;
  assign g2s_pop = accept && pop_prev;
  assign s2g_push = (accept && nop && push_prev) || (busy && done && r_push);
  always @(posedge clk) begin
    if (rst) busy <= 1'b0;
    else if (accept && !nop) busy <= 1'b1;
    else if (done) busy <= 1'b0;
    if (accept) r_push <= push_prev;
  end
  vta_storer #(
      .LOG_EB(`VTA_LOG_OUT_ELEM_BYTES), .AW(`VTA_LOG_OUT_DEPTH)
  ) storer (
      .clk(clk), .rst(rst), .start(accept && !nop),
      .sram_base(insn[`VTA_MEM_SRAM_BASE_LSB+:`VTA_MEM_SRAM_BASE_W]),
      .dram_base(insn[`VTA_MEM_DRAM_BASE_LSB+:`VTA_MEM_DRAM_BASE_W]),
      .y_size(m_ys), .x_size(m_xs), .x_stride(insn[`VTA_MEM_X_STRIDE_LSB+:SIZE_W]),
      .done(done),
      .awvalid(awvalid), .awready(awready), .awaddr(awaddr), .awlen(awlen),
      .wvalid(wvalid), .wready(wready), .wdata(wdata), .wstrb(wstrb), .wlast(wlast),
      .bvalid(bvalid), .bready(bready),
      .re(out_re), .raddr(out_raddr), .rdata(out_rdata)
  );
endmodule

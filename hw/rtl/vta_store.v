`include "vta_config.vh"
// Store module: executes STORE (OUT buffer -> DRAM) from its command queue; pops g2s, pushes
// s2g (store -> compute): the token queues of vta/isa.py TokenQueue.
module vta_store (
    input  wire                 clk,
    input  wire                 rst,
    input  wire [127:0]         insn,
    input  wire                 insn_valid,
    output wire                 insn_pop,
    input  wire                 g2s_empty,
    output wire                 g2s_pop,
    input  wire                 s2g_full,
    output wire                 s2g_push,
    output wire                 awvalid,
    input  wire                 awready,
    output wire [31:0]          awaddr,
    output wire [7:0]           awlen,
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
  wire pop_prev = insn[`VTA_MEM_POP_PREV_DEP_LSB];
  wire push_prev = insn[`VTA_MEM_PUSH_PREV_DEP_LSB];
  wire [15:0] m_ys = insn[`VTA_MEM_Y_SIZE_LSB+:16];
  wire [15:0] m_xs = insn[`VTA_MEM_X_SIZE_LSB+:16];
  wire nop = m_xs == 0 || m_ys == 0;
  reg busy, r_push;
  wire done;
  wire accept = !busy && insn_valid && (!pop_prev || !g2s_empty) && (!push_prev || !s2g_full);
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
      .LOG_EB(`VTA_LOG_OUT_ELEM_BYTES), .LOG_BB(`VTA_LOG_BUS_BYTES), .AW(`VTA_LOG_OUT_DEPTH),
      .MAX_BEATS(`VTA_MAX_BURST_BEATS), .PAGE_BYTES(`VTA_PAGE_BYTES),
      .MAX_OUT(`VTA_MAX_OUTSTANDING), .OUT_W(`VTA_LOG_MAX_OUTSTANDING)
  ) storer (
      .clk(clk), .rst(rst), .start(accept && !nop),
      .sram_base(insn[`VTA_MEM_SRAM_BASE_LSB+:16]), .dram_base(insn[`VTA_MEM_DRAM_BASE_LSB+:32]),
      .y_size(m_ys), .x_size(m_xs), .x_stride(insn[`VTA_MEM_X_STRIDE_LSB+:16]), .done(done),
      .awvalid(awvalid), .awready(awready), .awaddr(awaddr), .awlen(awlen),
      .wvalid(wvalid), .wready(wready), .wdata(wdata), .wstrb(wstrb), .wlast(wlast),
      .bvalid(bvalid), .bready(bready),
      .re(out_re), .raddr(out_raddr), .rdata(out_rdata)
  );
endmodule

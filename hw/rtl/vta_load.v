`include "vta_config.vh"
// Load module: executes LOAD INP and LOAD WGT (2-D strided DMA with zero padding) from its
// command queue; pops g2l (compute -> load), pushes l2g (load -> compute): the token queues of
// vta/isa.py TokenQueue.
module vta_load (
    input  wire                 clk,
    input  wire                 rst,
    // the instruction word also carries fields this module does not read
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [`VTA_INSN_BITS-1:0] insn,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                 insn_valid,
    output wire                 insn_pop,
    input  wire                 g2l_empty,
    output wire                 g2l_pop,
    input  wire                 l2g_full,
    output wire                 l2g_push,
    output reg  [`VTA_COUNTER_KINDS-1:0] act,  // this cycle's kind (docs/timing.md), one-hot
    output wire                 arvalid,
    input  wire                 arready,
    output wire [`VTA_AXI_ADDR_BITS-1:0] araddr,
    output wire [`VTA_AXI_LEN_BITS-1:0]  arlen,
    input  wire                 rvalid,
    input  wire [`VTA_BUS_BITS-1:0] rdata,
    input  wire                 rlast,
    output wire                 rready,
    output wire [`VTA_INP_BANKS-1:0] inp_we,
    output wire [`VTA_INP_BANKS*`VTA_INP_BANK_AW-1:0] inp_waddr,
    output wire [`VTA_INP_BANKS*`VTA_INP_ELEM_BITS-1:0] inp_wdata,
    output wire                 wgt_we,
    output wire [`VTA_LOG_WGT_DEPTH-1:0] wgt_waddr,
    output wire [`VTA_WGT_ELEM_BITS-1:0] wgt_wdata
);
  localparam integer SIZE_W = `VTA_MEM_X_SIZE_W;
  localparam integer PAD_W = `VTA_MEM_X_PAD_0_W;
  localparam [`VTA_MEM_MEMORY_TYPE_W-1:0] MEM_WGT = `VTA_MEM_WGT;

  wire pop_next = insn[`VTA_MEM_POP_NEXT_DEP_LSB];
  wire push_next = insn[`VTA_MEM_PUSH_NEXT_DEP_LSB];
  wire is_wgt = insn[`VTA_MEM_MEMORY_TYPE_LSB+:`VTA_MEM_MEMORY_TYPE_W] == MEM_WGT;
  wire [`VTA_MEM_SRAM_BASE_W-1:0] m_sram = insn[`VTA_MEM_SRAM_BASE_LSB+:`VTA_MEM_SRAM_BASE_W];
  wire [`VTA_MEM_DRAM_BASE_W-1:0] m_dram = insn[`VTA_MEM_DRAM_BASE_LSB+:`VTA_MEM_DRAM_BASE_W];
  wire [SIZE_W-1:0] m_ys = insn[`VTA_MEM_Y_SIZE_LSB+:SIZE_W];
  wire [SIZE_W-1:0] m_xs = insn[`VTA_MEM_X_SIZE_LSB+:SIZE_W];
  wire [SIZE_W-1:0] m_stride = insn[`VTA_MEM_X_STRIDE_LSB+:SIZE_W];
  wire [PAD_W-1:0] m_yp0 = insn[`VTA_MEM_Y_PAD_0_LSB+:PAD_W];
  wire [PAD_W-1:0] m_yp1 = insn[`VTA_MEM_Y_PAD_1_LSB+:PAD_W];
  wire [PAD_W-1:0] m_xp0 = insn[`VTA_MEM_X_PAD_0_LSB+:PAD_W];
  wire [PAD_W-1:0] m_xp1 = insn[`VTA_MEM_X_PAD_1_LSB+:PAD_W];
  wire nop = m_xs == 0 || (m_ys == 0 && m_yp0 == 0 && m_yp1 == 0);

  reg busy, r_wgt, r_push;
  wire tokens = !pop_next || !g2l_empty;
  wire accept = !busy && insn_valid && tokens && (!push_next || !l2g_full);
  wire inp_done, wgt_done, inp_active, wgt_active;
  always @(*) begin
    act = 0;
    act[`VTA_COUNTER_BUSY] = accept || (busy && (inp_active || wgt_active));
    act[`VTA_COUNTER_STALL_DRAM] = busy && !(inp_active || wgt_active);
    act[`VTA_COUNTER_STALL_TOKEN] = !busy && insn_valid && !tokens;
    act[`VTA_COUNTER_STALL_QUEUE] = !busy && insn_valid && tokens && !accept;
  end
  assign insn_pop = accept;
  assign g2l_pop = accept && pop_next;
  assign l2g_push = (accept && nop && push_next) || (busy && (inp_done || wgt_done) && r_push);
  always @(posedge clk) begin
    if (rst) busy <= 1'b0;
    else if (accept && !nop) busy <= 1'b1;
    else if (inp_done || wgt_done) busy <= 1'b0;
    if (accept) begin
      r_wgt <= is_wgt;
      r_push <= push_next;
    end
  end

  wire i_arvalid, w_arvalid, i_rready, w_rready;
  wire [`VTA_AXI_ADDR_BITS-1:0] i_araddr, w_araddr;
  wire [`VTA_AXI_LEN_BITS-1:0] i_arlen, w_arlen;
  vta_loader #(
      .LOG_EB(`VTA_LOG_INP_ELEM_BYTES), .AW(`VTA_LOG_INP_DEPTH)
  ) inp_loader (
      .clk(clk), .rst(rst), .start(accept && !nop && !is_wgt),
      .sram_base(m_sram), .dram_base(m_dram), .y_size(m_ys), .x_size(m_xs),
      .x_stride(m_stride), .y_pad_0(m_yp0), .y_pad_1(m_yp1), .x_pad_0(m_xp0),
      .x_pad_1(m_xp1), .done(inp_done), .active(inp_active),
      .arvalid(i_arvalid), .arready(arready), .araddr(i_araddr), .arlen(i_arlen),
      .rvalid(rvalid && !r_wgt), .rdata(rdata), .rlast(rlast), .rready(i_rready),
      .we(inp_we), .waddr(inp_waddr), .wdata(inp_wdata)
  );
  vta_loader #(
      .LOG_EB(`VTA_LOG_WGT_ELEM_BYTES), .AW(`VTA_LOG_WGT_DEPTH)
  ) wgt_loader (
      .clk(clk), .rst(rst), .start(accept && !nop && is_wgt),
      .sram_base(m_sram), .dram_base(m_dram), .y_size(m_ys), .x_size(m_xs),
      .x_stride(m_stride), .y_pad_0(m_yp0), .y_pad_1(m_yp1), .x_pad_0(m_xp0),
      .x_pad_1(m_xp1), .done(wgt_done), .active(wgt_active),
      .arvalid(w_arvalid), .arready(arready), .araddr(w_araddr), .arlen(w_arlen),
      .rvalid(rvalid && r_wgt), .rdata(rdata), .rlast(rlast), .rready(w_rready),
      .we(wgt_we), .waddr(wgt_waddr), .wdata(wgt_wdata)
  );
  assign arvalid = i_arvalid || w_arvalid;
  assign araddr = w_arvalid ? w_araddr : i_araddr;
  assign arlen = w_arvalid ? w_arlen : i_arlen;
  assign rready = r_wgt ? w_rready : i_rready;
endmodule

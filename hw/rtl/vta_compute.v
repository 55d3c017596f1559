`include "vta_config.vh"
// Compute module: executes LOAD UOP / LOAD ACC, GEMM, ALU and FINISH from its command queue
// (docs/timing.md). Owns the micro-op and accumulator buffers; reads INP/WGT, writes OUT.
// Micro-op pipeline, for a micro-op issued in cycle c (its UOP entry was read in c-1: in the
// accept cycle for the first, else while the previous one issues):
//   c      (A) indices d, s, w; read INP[s], WGT[w]; an ALU reads ACC[d]
//   c+1    (B) ALU-immediate operands; a tensor ALU reads ACC[s]; GEMM stage 1 (products)
//   c+2        ALU-immediate result; tensor ALU operands; GEMM stage 2 (dot products); a GEMM
//              reads ACC[d]
//   c+3        tensor ALU result; GEMM stage 3 (accumulate) result
// (the result stages of vta/hwconfig.py), then WRITE_TAPS-deep result registers; the write to
// ACC[d] and OUT[d] happens at the tap that ends the micro-op P + II - 1 cycles after issue
// (P = pipeline depth, II = issue interval). Reads are forwarded from every result not yet
// written, so any micro-op order gives the sequential result.
module vta_compute (
    input  wire                   clk,
    input  wire                   rst,
    // the instruction word also carries fields no compute instruction reads
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [`VTA_INSN_BITS-1:0] insn,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                   insn_valid,
    output wire                   insn_pop,
    input  wire                   l2g_empty,
    output wire                   l2g_pop,
    input  wire                   s2g_empty,
    output wire                   s2g_pop,
    input  wire                   g2l_full,
    output wire                   g2l_push,
    input  wire                   g2s_full,
    output wire                   g2s_push,
    output wire                   finish,
    output reg  [`VTA_COUNTER_KINDS-1:0] act,  // this cycle's kind (docs/timing.md), one-hot
    output wire                   bad_alu_op,
    // AXI4 read master (micro-op and accumulator loads)
    output wire                   arvalid,
    input  wire                   arready,
    output wire [`VTA_AXI_ADDR_BITS-1:0] araddr,
    output wire [`VTA_AXI_LEN_BITS-1:0]  arlen,
    input  wire                   rvalid,
    input  wire [`VTA_BUS_BITS-1:0]    rdata,
    input  wire                   rlast,
    output wire                   rready,
    // INP / WGT buffer read ports (banked like the load module writes them)
    output wire [`VTA_INP_BANKS-1:0]   inp_re,
    output wire [`VTA_INP_BANKS*`VTA_INP_BANK_AW-1:0] inp_raddr,
    input  wire [`VTA_INP_BANKS*`VTA_INP_ELEM_BITS-1:0]  inp_rdata,
    output wire                   wgt_re,
    output wire [`VTA_LOG_WGT_DEPTH-1:0]      wgt_raddr,
    input  wire [`VTA_WGT_ELEM_BITS-1:0]      wgt_rdata,
    // OUT buffer write port (banked like the store module reads it)
    output reg  [`VTA_OUT_BANKS-1:0]   out_we,
    output reg  [`VTA_OUT_BANKS*`VTA_OUT_BANK_AW-1:0] out_waddr,
    output reg  [`VTA_OUT_BANKS*`VTA_OUT_ELEM_BITS-1:0]  out_wdata
);
  localparam integer ADDR_W = `VTA_AXI_ADDR_BITS;
  localparam integer LEN_W = `VTA_AXI_LEN_BITS;
  localparam integer INP_EW = `VTA_INP_ELEM_BITS;
  localparam integer LOG_INP_BANKS = `VTA_LOG_INP_BANKS;
  localparam integer INP_BANKS = 1 << LOG_INP_BANKS;
  localparam integer INP_BAW = `VTA_LOG_INP_DEPTH - LOG_INP_BANKS;
  localparam integer WGT_AW = `VTA_LOG_WGT_DEPTH;
  localparam integer OUT_EW = `VTA_OUT_ELEM_BITS;
  localparam integer LOG_OUT_BANKS = `VTA_LOG_OUT_BANKS;
  localparam integer OUT_BANKS = 1 << LOG_OUT_BANKS;
  localparam integer OUT_BAW = `VTA_LOG_OUT_DEPTH - LOG_OUT_BANKS;
  localparam integer ACC_EW = `VTA_ACC_ELEM_BITS;
  localparam integer ACC_AW = `VTA_LOG_ACC_DEPTH;
  localparam integer LOG_UOP_BANKS = `VTA_LOG_UOP_BANKS;
  localparam integer UOP_BANKS = 1 << LOG_UOP_BANKS;
  localparam integer UOP_BAW = `VTA_LOG_UOP_DEPTH - LOG_UOP_BANKS;
  localparam integer UOP_BITS = `VTA_UOP_BITS;
  localparam integer LANES = `VTA_BATCH * `VTA_BLOCK_OUT;
  localparam integer TAPS = `VTA_WRITE_TAPS;
  localparam integer SRC_W = `VTA_UOP_SRC_W;  // an INP (GEMM) or ACC (ALU) index
  localparam integer OP_W = `VTA_MEM_OPCODE_W;
  localparam integer MT_W = `VTA_MEM_MEMORY_TYPE_W;
  localparam integer SIZE_W = `VTA_MEM_X_SIZE_W;
  localparam integer PAD_W = `VTA_MEM_X_PAD_0_W;
  localparam integer ALU_OP_W = `VTA_ALU_ALU_OPCODE_W;
  localparam integer ITER_W = `VTA_GEMM_ITER_OUT_W;
  localparam integer BGN_W = `VTA_GEMM_UOP_BGN_W;
  localparam integer END_W = `VTA_GEMM_UOP_END_W;
  localparam integer II_W = `VTA_ALU_II_BITS;
  localparam integer TAP_W = `VTA_WRITE_TAP_BITS;
  localparam integer DRAIN_W = `VTA_DRAIN_BITS;
  localparam [OP_W-1:0] OP_LOAD = `VTA_OP_LOAD;
  localparam [OP_W-1:0] OP_GEMM = `VTA_OP_GEMM;
  localparam [OP_W-1:0] OP_ALU = `VTA_OP_ALU;
  localparam [OP_W-1:0] OP_FINISH = `VTA_OP_FINISH;
  localparam [MT_W-1:0] MEM_UOP = `VTA_MEM_UOP;
  localparam [MT_W-1:0] MEM_ACC = `VTA_MEM_ACC;
  localparam [ALU_OP_W-1:0] ALUOP_MUL = `VTA_ALUOP_MUL;
  localparam [ALU_OP_W-1:0] ALUOP_REQ = `VTA_ALUOP_REQ;
  localparam [II_W-1:0] II_GEMM = 1;
  localparam [II_W-1:0] ONE = 1;
  localparam [II_W-1:0] II_IMM = `VTA_ALU_II_IMM;
  localparam [II_W-1:0] II_TENSOR = `VTA_ALU_II_TENSOR;
  // cycles from a micro-op's issue to its ACC write, and the result register written then
  localparam [DRAIN_W-1:0] GEMM_LAT = `VTA_GEMM_LATENCY;
  localparam [DRAIN_W-1:0] IMM_LAT = `VTA_ALU_IMM_LATENCY;
  localparam [DRAIN_W-1:0] TENSOR_LAT = `VTA_ALU_TENSOR_LATENCY;
  localparam [TAP_W-1:0] GEMM_TAP = `VTA_GEMM_WRITE_TAP;
  localparam [TAP_W-1:0] IMM_TAP = `VTA_ALU_IMM_WRITE_TAP;
  localparam [TAP_W-1:0] TENSOR_TAP = `VTA_ALU_TENSOR_WRITE_TAP;
  localparam [DRAIN_W-1:0] GEMM_PIPE = `VTA_GEMM_PIPE;
  localparam [DRAIN_W-1:0] ALU_PIPE = `VTA_ALU_PIPE;
  localparam integer UOP_LAST_BANK = UOP_BANKS - 1;
  localparam integer INP_LAST_BANK = INP_BANKS - 1;
  localparam [LOG_UOP_BANKS:0] UOP_BANK_MASK = UOP_LAST_BANK[LOG_UOP_BANKS:0];
  localparam [LOG_INP_BANKS:0] INP_BANK_MASK = INP_LAST_BANK[LOG_INP_BANKS:0];
  localparam integer OUT_LAST_BANK = OUT_BANKS - 1;
  localparam [LOG_OUT_BANKS:0] OUT_BANK_MASK = OUT_LAST_BANK[LOG_OUT_BANKS:0];
  localparam [OUT_BANKS-1:0] ONE_BANK = 1;

  // ------------------------------------------------------------------ decode
  wire [OP_W-1:0] opcode = insn[`VTA_MEM_OPCODE_LSB+:OP_W];
  wire pop_prev = insn[`VTA_MEM_POP_PREV_DEP_LSB];
  wire pop_next = insn[`VTA_MEM_POP_NEXT_DEP_LSB];
  wire push_prev = insn[`VTA_MEM_PUSH_PREV_DEP_LSB];
  wire push_next = insn[`VTA_MEM_PUSH_NEXT_DEP_LSB];
  wire [MT_W-1:0] mem_type = insn[`VTA_MEM_MEMORY_TYPE_LSB+:MT_W];
  wire [`VTA_MEM_SRAM_BASE_W-1:0] m_sram = insn[`VTA_MEM_SRAM_BASE_LSB+:`VTA_MEM_SRAM_BASE_W];
  wire [`VTA_MEM_DRAM_BASE_W-1:0] m_dram = insn[`VTA_MEM_DRAM_BASE_LSB+:`VTA_MEM_DRAM_BASE_W];
  wire [SIZE_W-1:0] m_ys = insn[`VTA_MEM_Y_SIZE_LSB+:SIZE_W];
  wire [SIZE_W-1:0] m_xs = insn[`VTA_MEM_X_SIZE_LSB+:SIZE_W];
  wire [SIZE_W-1:0] m_stride = insn[`VTA_MEM_X_STRIDE_LSB+:SIZE_W];
  wire [PAD_W-1:0] m_yp0 = insn[`VTA_MEM_Y_PAD_0_LSB+:PAD_W];
  wire [PAD_W-1:0] m_yp1 = insn[`VTA_MEM_Y_PAD_1_LSB+:PAD_W];
  wire [PAD_W-1:0] m_xp0 = insn[`VTA_MEM_X_PAD_0_LSB+:PAD_W];
  wire [PAD_W-1:0] m_xp1 = insn[`VTA_MEM_X_PAD_1_LSB+:PAD_W];
  wire is_load = opcode == OP_LOAD;
  wire is_gemm = opcode == OP_GEMM;
  wire is_alu = opcode == OP_ALU;
  wire is_finish = opcode == OP_FINISH;
  wire load_nop = m_xs == 0 || (m_ys == 0 && m_yp0 == 0 && m_yp1 == 0);
  wire [ALU_OP_W-1:0] alu_op = insn[`VTA_ALU_ALU_OPCODE_LSB+:ALU_OP_W];
  wire use_imm = insn[`VTA_ALU_USE_IMM_LSB];
  wire [BGN_W-1:0] uop_bgn = insn[`VTA_GEMM_UOP_BGN_LSB+:BGN_W];
  wire [END_W-1:0] uop_end = insn[`VTA_GEMM_UOP_END_LSB+:END_W];
  wire [END_W-1:0] uop_first = {{(END_W - BGN_W) {1'b0}}, uop_bgn};
  wire [ITER_W-1:0] iter_out = insn[`VTA_GEMM_ITER_OUT_LSB+:ITER_W];
  wire [ITER_W-1:0] iter_in = insn[`VTA_GEMM_ITER_IN_LSB+:ITER_W];
  wire no_uops = uop_end <= uop_first || iter_out == 0 || iter_in == 0;

  // ------------------------------------------------------------------ control
  localparam [1:0] S_IDLE = 2'd0, S_LOAD = 2'd1, S_ISSUE = 2'd2, S_DRAIN = 2'd3;
  reg [1:0] state;
  reg r_push_prev, r_push_next;
  wire tokens = (!pop_prev || !l2g_empty) && (!pop_next || !s2g_empty);
  wire ready = tokens && (!push_prev || !g2l_full) && (!push_next || !g2s_full);
  wire accept = state == S_IDLE && insn_valid && ready;
  wire uop_loader_done, acc_loader_done, uop_loader_active, acc_loader_active;
  wire loading = uop_loader_active || acc_loader_active;
  always @(*) begin
    act = 0;
    act[`VTA_COUNTER_BUSY] = accept || state == S_ISSUE || state == S_DRAIN ||
                            (state == S_LOAD && loading);
    act[`VTA_COUNTER_STALL_DRAM] = state == S_LOAD && !loading;
    act[`VTA_COUNTER_STALL_TOKEN] = state == S_IDLE && insn_valid && !tokens;
    act[`VTA_COUNTER_STALL_QUEUE] = state == S_IDLE && insn_valid && tokens && !accept;
  end
  reg [DRAIN_W-1:0] drain;
  wire one_cycle = accept && (is_finish || (is_load && load_nop) || !(is_load || is_gemm || is_alu));
  wire last_cycle = one_cycle || (state == S_LOAD && (uop_loader_done || acc_loader_done)) ||
                    (state == S_DRAIN && drain == 0);
  assign insn_pop = accept;
  assign l2g_pop = accept && pop_prev;
  assign s2g_pop = accept && pop_next;
  assign g2l_push = last_cycle && (one_cycle ? push_prev : r_push_prev);
  assign g2s_push = last_cycle && (one_cycle ? push_next : r_push_next);
  assign finish = accept && is_finish;
  assign bad_alu_op = accept && is_alu && (alu_op > ALUOP_REQ ||
      (alu_op == ALUOP_MUL && `VTA_ALU_MUL_ENABLED == 0) ||
      (alu_op == ALUOP_REQ && `VTA_ALU_REQUANT_ENABLED == 0));

  wire start_uop = accept && is_load && !load_nop && mem_type == MEM_UOP;
  wire start_acc = accept && is_load && !load_nop && mem_type == MEM_ACC;
  wire start_uops = accept && (is_gemm || is_alu);

  // Instruction registers of a GEMM / ALU.
  reg r_alu, r_reset, r_tensor, r_load_acc;
  reg [ALU_OP_W-1:0] r_op;
  reg [`VTA_ACC_WIDTH-1:0] r_imm;
  reg [END_W-1:0] r_bgn;
  reg [END_W-1:0] r_end;
  reg [ITER_W-1:0] r_iter_out, r_iter_in;
  reg [ACC_AW-1:0] r_dfo, r_dfi;
  reg [SRC_W-1:0] r_sfo, r_sfi;
  reg [WGT_AW-1:0] r_wfo, r_wfi;
  reg [II_W-1:0] r_ii, ii_cnt;
  reg [TAP_W-1:0] r_tap;
  // Loop state.
  reg [END_W-1:0] k;
  reg [ITER_W-1:0] i, j;
  reg [ACC_AW-1:0] dst_i, dst_ij;
  reg [SRC_W-1:0] src_i, src_ij;
  reg [WGT_AW-1:0] wgt_i, wgt_ij;
  wire issue = state == S_ISSUE && ii_cnt == 0;
  wire k_last = k == r_end - 1;
  wire j_last = j == r_iter_in - 1;
  wire i_last = i == r_iter_out - 1;
  wire issue_last = issue && k_last && j_last && i_last;
  wire [END_W-1:0] k_next = k_last ? r_bgn : k + 1'b1;
  // UOP read one cycle before each issue: the first in the accept cycle; with an issue every
  // cycle, during the previous issue; else in the cycle before the issue counter runs out.
  wire uop_first_read = start_uops && !no_uops;
  wire uop_next_read = state == S_ISSUE && !issue_last && (issue ? r_ii == ONE : ii_cnt == ONE);
  wire uop_re = uop_first_read || uop_next_read;
  // (an index read is below the UOP depth: the top bit, there for uop_end, is 0)
  /* verilator lint_off UNUSEDSIGNAL */
  wire [END_W-1:0] uop_ra = uop_first_read ? uop_first : issue ? k_next : k;
  /* verilator lint_on UNUSEDSIGNAL */

  reg [DRAIN_W-1:0] r_lat;

  always @(posedge clk) begin
    if (rst) begin
      state <= S_IDLE;
    end else begin
      if (accept) begin
        r_push_prev <= push_prev;
        r_push_next <= push_next;
        r_load_acc <= mem_type == MEM_ACC;
        if (start_uop || start_acc) state <= S_LOAD;
        if (start_uops) begin
          r_alu <= is_alu;
          r_reset <= is_gemm && insn[`VTA_GEMM_RESET_REG_LSB];
          r_op <= alu_op;
          r_tensor <= is_alu && !use_imm;
          r_imm <= {{(`VTA_ACC_WIDTH - `VTA_ALU_IMM_W) {insn[`VTA_ALU_IMM_LSB+`VTA_ALU_IMM_W-1]}},
                    insn[`VTA_ALU_IMM_LSB+:`VTA_ALU_IMM_W]};
          r_bgn <= uop_first;
          r_end <= uop_end;
          r_iter_out <= iter_out;
          r_iter_in <= iter_in;
          r_dfo <= insn[`VTA_GEMM_DST_FACTOR_OUT_LSB+:`VTA_GEMM_DST_FACTOR_OUT_W];
          r_dfi <= insn[`VTA_GEMM_DST_FACTOR_IN_LSB+:`VTA_GEMM_DST_FACTOR_IN_W];
          if (is_alu) begin
            r_sfo <= {{(SRC_W - `VTA_ALU_SRC_FACTOR_OUT_W) {1'b0}}, insn[`VTA_ALU_SRC_FACTOR_OUT_LSB+:`VTA_ALU_SRC_FACTOR_OUT_W]};
            r_sfi <= {{(SRC_W - `VTA_ALU_SRC_FACTOR_IN_W) {1'b0}}, insn[`VTA_ALU_SRC_FACTOR_IN_LSB+:`VTA_ALU_SRC_FACTOR_IN_W]};
            r_wfo <= 0;
            r_wfi <= 0;
          end else begin
            r_sfo <= {{(SRC_W - `VTA_GEMM_SRC_FACTOR_OUT_W) {1'b0}}, insn[`VTA_GEMM_SRC_FACTOR_OUT_LSB+:`VTA_GEMM_SRC_FACTOR_OUT_W]};
            r_sfi <= {{(SRC_W - `VTA_GEMM_SRC_FACTOR_IN_W) {1'b0}}, insn[`VTA_GEMM_SRC_FACTOR_IN_LSB+:`VTA_GEMM_SRC_FACTOR_IN_W]};
            r_wfo <= insn[`VTA_GEMM_WGT_FACTOR_OUT_LSB+:`VTA_GEMM_WGT_FACTOR_OUT_W];
            r_wfi <= insn[`VTA_GEMM_WGT_FACTOR_IN_LSB+:`VTA_GEMM_WGT_FACTOR_IN_W];
          end
          r_ii <= !is_alu ? II_GEMM : use_imm ? II_IMM : II_TENSOR;
          r_lat <= !is_alu ? GEMM_LAT : use_imm ? IMM_LAT : TENSOR_LAT;
          r_tap <= !is_alu ? GEMM_TAP : use_imm ? IMM_TAP : TENSOR_TAP;
          k <= uop_first;
          i <= 0;
          j <= 0;
          dst_i <= 0;
          dst_ij <= 0;
          src_i <= 0;
          src_ij <= 0;
          wgt_i <= 0;
          wgt_ij <= 0;
          ii_cnt <= 0;
          if (no_uops) begin
            state <= S_DRAIN;
            drain <= (is_alu ? ALU_PIPE : GEMM_PIPE) - 1'b1;
          end else state <= S_ISSUE;
        end
      end
      if (state == S_LOAD && (uop_loader_done || acc_loader_done)) state <= S_IDLE;
      if (state == S_ISSUE) begin
        ii_cnt <= (issue ? r_ii : ii_cnt) - 1'b1;
        if (issue) begin
          if (issue_last) begin
            state <= S_DRAIN;
            drain <= r_lat - 1'b1;
          end
          if (!k_last) k <= k + 1'b1;
          else begin
            k <= r_bgn;
            if (!j_last) begin
              j <= j + 1'b1;
              dst_ij <= dst_ij + r_dfi;
              src_ij <= src_ij + r_sfi;
              wgt_ij <= wgt_ij + r_wfi;
            end else begin
              j <= 0;
              i <= i + 1'b1;
              dst_i <= dst_i + r_dfo;
              src_i <= src_i + r_sfo;
              wgt_i <= wgt_i + r_wfo;
              dst_ij <= dst_i + r_dfo;
              src_ij <= src_i + r_sfo;
              wgt_ij <= wgt_i + r_wfo;
            end
          end
        end
      end
      if (state == S_DRAIN) begin
        if (drain == 0) state <= S_IDLE;
        else drain <= drain - 1'b1;
      end
    end
  end

  // ------------------------------------------------------------------ loaders (UOP, ACC)
  wire u_arvalid, a_arvalid, u_rready, a_rready;
  wire [ADDR_W-1:0] u_araddr, a_araddr;
  wire [LEN_W-1:0] u_arlen, a_arlen;
  wire [UOP_BANKS-1:0] uop_we;
  wire [UOP_BANKS*UOP_BAW-1:0] uop_waddr;
  wire [UOP_BANKS*UOP_BITS-1:0] uop_wdata;
  wire ld_acc_we;
  wire [ACC_AW-1:0] ld_acc_waddr;
  wire [ACC_EW-1:0] ld_acc_wdata;
  vta_loader #(
      .LOG_EB(`VTA_LOG_UOP_ELEM_BYTES),
      .AW(`VTA_LOG_UOP_DEPTH)
  ) uop_loader (
      .clk(clk), .rst(rst), .start(start_uop),
      .sram_base(m_sram), .dram_base(m_dram), .y_size(m_ys), .x_size(m_xs),
      .x_stride(m_stride), .y_pad_0(m_yp0), .y_pad_1(m_yp1), .x_pad_0(m_xp0),
      .x_pad_1(m_xp1), .done(uop_loader_done), .active(uop_loader_active),
      .arvalid(u_arvalid), .arready(arready), .araddr(u_araddr), .arlen(u_arlen),
      .rvalid(rvalid && !r_load_acc), .rdata(rdata), .rlast(rlast), .rready(u_rready),
      .we(uop_we), .waddr(uop_waddr), .wdata(uop_wdata)
  );
  vta_loader #(
      .LOG_EB(`VTA_LOG_ACC_ELEM_BYTES),
      .AW(ACC_AW)
  ) acc_loader (
      .clk(clk), .rst(rst), .start(start_acc),
      .sram_base(m_sram), .dram_base(m_dram), .y_size(m_ys), .x_size(m_xs),
      .x_stride(m_stride), .y_pad_0(m_yp0), .y_pad_1(m_yp1), .x_pad_0(m_xp0),
      .x_pad_1(m_xp1), .done(acc_loader_done), .active(acc_loader_active),
      .arvalid(a_arvalid), .arready(arready), .araddr(a_araddr), .arlen(a_arlen),
      .rvalid(rvalid && r_load_acc), .rdata(rdata), .rlast(rlast), .rready(a_rready),
      .we(ld_acc_we), .waddr(ld_acc_waddr), .wdata(ld_acc_wdata)
  );
  assign arvalid = u_arvalid || a_arvalid;
  assign araddr = a_arvalid ? a_araddr : u_araddr;
  assign arlen = a_arvalid ? a_arlen : u_arlen;
  assign rready = r_load_acc ? a_rready : u_rready;

  // ------------------------------------------------------------------ buffers
  wire [UOP_BANKS*UOP_BITS-1:0] uop_rdata;
  genvar g;
  generate
    for (g = 0; g < UOP_BANKS; g = g + 1) begin : g_uop
      vta_sram #(.W(UOP_BITS), .AW(UOP_BAW)) bank (
          .clk(clk), .we(uop_we[g]), .waddr(uop_waddr[g*UOP_BAW+:UOP_BAW]),
          .wdata(uop_wdata[g*UOP_BITS+:UOP_BITS]), .re(uop_re),
          .raddr(uop_ra[LOG_UOP_BANKS+:UOP_BAW]), .rdata(uop_rdata[g*UOP_BITS+:UOP_BITS])
      );
    end
  endgenerate
  reg acc_we;
  reg [ACC_AW-1:0] acc_waddr, acc_raddr;
  reg [ACC_EW-1:0] acc_wdata;
  wire [ACC_EW-1:0] acc_rdata;
  vta_sram #(.W(ACC_EW), .AW(ACC_AW)) acc_mem (
      .clk(clk), .we(acc_we), .waddr(acc_waddr), .wdata(acc_wdata),
      .re(1'b1), .raddr(acc_raddr), .rdata(acc_rdata)
  );

  // ------------------------------------------------------------------ micro-op pipeline
  // A: the issue cycle; the UOP bank read in the cycle before holds this micro-op.
  reg [LOG_UOP_BANKS:0] uop_sel;
  always @(posedge clk) if (uop_re) uop_sel <= uop_ra[LOG_UOP_BANKS:0] & UOP_BANK_MASK;
  wire a_valid = issue;
  // (a micro-op may leave high bits unused when its indices need fewer than UOP_BITS)
  /* verilator lint_off UNUSEDSIGNAL */
  wire [UOP_BITS-1:0] uop = uop_rdata[uop_sel*UOP_BITS+:UOP_BITS];
  /* verilator lint_on UNUSEDSIGNAL */
  wire [ACC_AW-1:0] a_d = uop[`VTA_UOP_DST_LSB+:`VTA_UOP_DST_W] + dst_ij;
  wire [SRC_W-1:0] a_s = uop[`VTA_UOP_SRC_LSB+:SRC_W] + src_ij;
  wire [WGT_AW-1:0] a_w = uop[`VTA_UOP_WGT_LSB+:`VTA_UOP_WGT_W] + wgt_ij;
  assign inp_re = {INP_BANKS{a_valid}};
  assign inp_raddr = {INP_BANKS{a_s[LOG_INP_BANKS+:INP_BAW]}};
  assign wgt_re = a_valid;
  assign wgt_raddr = a_w;

  // A -> B
  reg b_valid;
  reg [ACC_AW-1:0] b_d, b_s;
  reg [LOG_INP_BANKS:0] b_inp_sel;
  always @(posedge clk) begin
    b_valid <= a_valid;
    b_d <= a_d;
    b_s <= a_s[ACC_AW-1:0];
    b_inp_sel <= a_s[LOG_INP_BANKS:0] & INP_BANK_MASK;
  end
  // GEMM stages 2 and 3: the destination row, read from ACC in stage 2.
  reg c_valid, d_valid;
  reg [ACC_AW-1:0] c_d, d_d;
  always @(posedge clk) begin
    c_valid <= b_valid && !r_alu;
    c_d <= b_d;
    d_valid <= c_valid;
    d_d <= c_d;
  end
  always @(*) acc_raddr = !r_alu ? c_d : r_tensor && b_valid ? b_s : a_d;

  // Result registers v[1..TAPS]; v[r_tap] is written this cycle. wl_* is last cycle's write.
  reg [TAPS:1] v_valid;
  reg [ACC_AW-1:0] v_addr[1:TAPS];
  reg [ACC_EW-1:0] v_data[1:TAPS];
  reg wl_valid;
  reg [ACC_AW-1:0] wl_addr;
  reg [ACC_EW-1:0] wl_data;
  // Forwarded ACC read: raw buffer data overridden by the newest pending write to `addr`.
  function automatic [ACC_EW-1:0] forward(input [ACC_AW-1:0] addr, input [ACC_EW-1:0] raw);
    integer t;
    begin
      forward = raw;
      if (wl_valid && wl_addr == addr) forward = wl_data;
      for (t = TAPS; t >= 1; t = t - 1) if (v_valid[t] && v_addr[t] == addr) forward = v_data[t];
    end
  endfunction

  // The row ACC was read for last cycle (its data is acc_rdata now), and that data forwarded.
  reg [ACC_AW-1:0] rd_row;
  always @(posedge clk) rd_row <= acc_raddr;
  wire [ACC_EW-1:0] acc_now = forward(rd_row, acc_rdata);

  // ALU: operands enter vta_alu in the cycle their last ACC read arrives (an immediate's at B,
  // a tensor op's ACC[s] one cycle after its ACC[d], which waits in t_x); the result leaves one
  // cycle later (p_*). A read of ACC[d] of the row whose result leaves this cycle takes that
  // result (bypass), so back-to-back micro-ops on one row see each other; ACC[s] needs no
  // bypass, as no result leaves in the cycle a tensor op's ACC[s] arrives (issue interval 2).
  reg t_valid, p_valid;
  reg [ACC_AW-1:0] t_d, p_d;
  reg [ACC_EW-1:0] t_x;
  wire [ACC_EW-1:0] alu_out;
  wire bypass = p_valid && p_d == rd_row;
  wire [ACC_EW-1:0] acc_alu = bypass ? alu_out : acc_now;
  always @(posedge clk) begin
    t_valid <= r_tensor && b_valid;
    t_d <= b_d;
    t_x <= acc_alu;
    p_valid <= !rst && r_alu && (r_tensor ? t_valid : b_valid);
    p_d <= r_tensor ? t_d : b_d;
  end

  wire [ACC_EW-1:0] gemm_out;
  vta_gemm_core gemm (
      .clk(clk), .inp(inp_rdata[b_inp_sel*INP_EW+:INP_EW]), .wgt(wgt_rdata), .reset(r_reset),
      .acc(acc_now), .out(gemm_out)
  );
  vta_alu alu (
      .clk(clk), .op(r_op), .use_imm(!r_tensor), .imm(r_imm), .x(acc_alu), .t(t_x), .s(acc_now),
      .out(alu_out)
  );
  wire res_valid = !r_alu ? d_valid : p_valid;
  wire [ACC_AW-1:0] res_addr = !r_alu ? d_d : p_d;
  wire [ACC_EW-1:0] res_data = r_alu ? alu_out : gemm_out;

  integer t;
  always @(posedge clk) begin
    if (rst) begin
      v_valid <= 0;
      wl_valid <= 1'b0;
    end else begin
      v_valid[1] <= res_valid;
      for (t = 2; t <= TAPS; t = t + 1) v_valid[t] <= v_valid[t-1] && t[TAP_W-1:0] <= r_tap;
      wl_valid <= acc_we && state != S_LOAD;
    end
    v_addr[1] <= res_addr;
    v_data[1] <= res_data;
    for (t = 2; t <= TAPS; t = t + 1) begin
      v_addr[t] <= v_addr[t-1];
      v_data[t] <= v_data[t-1];
    end
    wl_addr <= acc_waddr;
    wl_data <= acc_wdata;
  end

  // ACC / OUT writes: the ACC loader, or the micro-op result at tap r_tap.
  integer n, tap;
  always @(*) begin
    acc_we = 1'b0;
    acc_waddr = 0;
    acc_wdata = 0;
    for (tap = 1; tap <= TAPS; tap = tap + 1) begin
      if (tap[TAP_W-1:0] == r_tap) begin
        acc_we = v_valid[tap];
        acc_waddr = v_addr[tap];
        acc_wdata = v_data[tap];
      end
    end
    out_we = 0;
    out_waddr = 0;
    out_wdata = 0;
    if (acc_we) begin
      out_we = ONE_BANK << (acc_waddr[LOG_OUT_BANKS:0] & OUT_BANK_MASK);  // the row's bank
      out_waddr = {OUT_BANKS{acc_waddr[LOG_OUT_BANKS+:OUT_BAW]}};
      for (n = 0; n < LANES; n = n + 1) begin
        out_wdata[n*`VTA_OUT_WIDTH+:`VTA_OUT_WIDTH] = acc_wdata[n*`VTA_ACC_WIDTH+:`VTA_OUT_WIDTH];
      end
      out_wdata = {OUT_BANKS{out_wdata[OUT_EW-1:0]}};
    end
    if (ld_acc_we) begin
      acc_we = 1'b1;
      acc_waddr = ld_acc_waddr;
      acc_wdata = ld_acc_wdata;
    end
  end
endmodule

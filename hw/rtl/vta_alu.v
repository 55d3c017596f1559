`include "vta_config.vh"
// Tensor ALU lanes: ACC[d] = op(ACC[d], y) with y the immediate or ACC[s] (docs/architecture.md,
// ISA semantics):
// MIN, MAX, ADD wrap; SHR takes a signed amount (>= 0 arithmetic right, < 0 left), magnitude
// saturating at width - 1; MUL only when MUL_ENABLED; REQ (requantize, only when REQ_ENABLED)
// clips (x + (use_imm ? 0 : ACC[s])) >>> imm[shift bits] to the signed OUT_W-bit range, or to
// [0, max] when imm[RELU_BIT] (relu) is set. A disabled op passes x unchanged.
// The operands are registered at the clock edge after they are presented and the result is
// computed from those registers, so `out` follows its operands by one cycle and the caller
// can forward `out` into the next immediate op's x (back-to-back micro-ops on one row) with no
// arithmetic between the two. Only a tensor REQ's sum, of operands that never come from `out`,
// and the shift amounts, which never depend on `out`, are computed before the register.
module vta_alu #(
    parameter integer LANES = `VTA_BATCH * `VTA_BLOCK_OUT,
    parameter integer AW = `VTA_ACC_WIDTH,
    parameter integer OUT_W = `VTA_OUT_WIDTH,
    parameter integer MUL_ENABLED = `VTA_ALU_MUL_ENABLED,
    parameter integer REQ_ENABLED = `VTA_ALU_REQUANT_ENABLED,
    parameter integer OP_W = `VTA_ALU_ALU_OPCODE_W,
    parameter integer OP_MIN = `VTA_ALUOP_MIN,
    parameter integer OP_MAX = `VTA_ALUOP_MAX,
    parameter integer OP_ADD = `VTA_ALUOP_ADD,
    parameter integer OP_SHR = `VTA_ALUOP_SHR,
    parameter integer OP_MUL = `VTA_ALUOP_MUL,
    parameter integer OP_REQ = `VTA_ALUOP_REQ,
    parameter integer REQ_SHIFT_BITS = `VTA_ALU_REQ_SHIFT_BITS,
    parameter integer RELU_BIT = `VTA_ALU_REQ_RELU_BIT
) (
    input  wire                clk,
    input  wire [OP_W-1:0]     op,
    input  wire                use_imm,
    input  wire [AW-1:0]       imm,  // the sign-extended immediate
    input  wire [LANES*AW-1:0] x,    // ACC[d] of an immediate op
    input  wire [LANES*AW-1:0] t,    // ACC[d] of a tensor op
    input  wire [LANES*AW-1:0] s,    // ACC[s] of a tensor op
    output reg  [LANES*AW-1:0] out   // op(ACC[d], y) of the operands presented last cycle
);
  localparam integer SW = $clog2(AW);  // shift amount bits; magnitudes saturate at AW - 1
  localparam signed [AW-1:0] HI = (1 << (OUT_W - 1)) - 1;
  localparam signed [AW-1:0] LO = -(1 << (OUT_W - 1));
  localparam integer WIDEST_SHIFT = AW - 1;
  localparam [SW-1:0] MAX_SHIFT = WIDEST_SHIFT[SW-1:0];
  localparam [OP_W-1:0] MIN_OP = OP_MIN[OP_W-1:0], MAX_OP = OP_MAX[OP_W-1:0],
                        ADD_OP = OP_ADD[OP_W-1:0], SHR_OP = OP_SHR[OP_W-1:0],
                        MUL_OP = OP_MUL[OP_W-1:0], REQ_OP = OP_REQ[OP_W-1:0];
  localparam [AW-1:0] ONES = {AW{1'b1}};
  integer n;

  // Stage 1: the operands, a tensor REQ's sum and every lane's shift amount; what the
  // instruction fixes (op, relu, and REQ's overflow mask: the bits that must all equal the sign
  // for sum >>> shift to fit OUT_W bits).
  wire req = op == REQ_OP;
  wire [SW-1:0] req_shift = imm[REQ_SHIFT_BITS-1:0];
  reg signed [AW-1:0] y;
  reg in_range;
  reg [LANES*AW-1:0] sum_d;
  reg [LANES*SW-1:0] amount_d;
  always @(*) begin
    for (n = 0; n < LANES; n = n + 1) begin
      y = use_imm ? imm : s[n*AW+:AW];
      sum_d[n*AW+:AW] = t[n*AW+:AW] + s[n*AW+:AW];
      // |y| <= AW - 1 iff the bits above the amount are all sign (and y is not -2**SW)
      in_range = y[AW-1] ? (&y[AW-1:SW] && |y[SW-1:0]) : !(|y[AW-1:SW]);
      amount_d[n*SW+:SW] = req ? req_shift : !in_range ? MAX_SHIFT
                           : y[AW-1] ? -y[SW-1:0] : y[SW-1:0];
    end
  end
  reg [LANES*AW-1:0] x_q, y_q, sum_q;
  reg [LANES*SW-1:0] amount_q;
  reg [OP_W-1:0] op_q;
  reg sum_req_q, relu_q;
  reg [AW-1:0] ovf_mask_q;
  always @(posedge clk) begin
    x_q <= use_imm ? x : t;
    y_q <= use_imm ? {LANES{imm}} : s;
    sum_q <= sum_d;
    amount_q <= amount_d;
    op_q <= op;
    sum_req_q <= req && !use_imm;
    relu_q <= imm[RELU_BIT];
    ovf_mask_q <= ONES << ({1'b0, req_shift} + OUT_W[SW:0] - 1'b1);
  end

  // Stage 2: select, add, shift (SHR shifts x, REQ x or the tensor sum) and saturate.
  reg signed [AW-1:0] a, b, src, shifted, r;
  reg [SW-1:0] amount;
  reg sign, ovf;
  always @(*) begin
    for (n = 0; n < LANES; n = n + 1) begin
      a = x_q[n*AW+:AW];
      b = y_q[n*AW+:AW];
      amount = amount_q[n*SW+:SW];
      src = sum_req_q ? sum_q[n*AW+:AW] : a;
      shifted = src >>> amount;
      sign = src[AW-1];
      ovf = |((src ^ {AW{sign}}) & ovf_mask_q);
      case (op_q)
        MIN_OP: r = a < b ? a : b;
        MAX_OP: r = a < b ? b : a;
        ADD_OP: r = a + b;
        SHR_OP: r = b[AW-1] ? a << amount : shifted;
        MUL_OP: r = MUL_ENABLED != 0 ? a * b : a;
        REQ_OP: r = REQ_ENABLED == 0 ? a : relu_q && sign ? {AW{1'b0}} : ovf ? (sign ? LO : HI)
                    : shifted;
        default: r = a;
      endcase
      out[n*AW+:AW] = r;
    end
  end
endmodule

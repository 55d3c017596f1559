`include "vta_config.vh"
// Tensor ALU lanes: ACC[d] = op(ACC[d], y) with y the immediate or ACC[s] (docs/architecture.md,
// ISA semantics):
// MIN, MAX, ADD wrap; SHR takes a signed amount (>= 0 arithmetic right, < 0 left), magnitude
// saturating at width - 1; MUL only when MUL_ENABLED; REQ (requantize, only when REQ_ENABLED)
// clips (x + (use_imm ? 0 : ACC[s])) >>> imm[shift bits] to the signed OUT_W-bit range, or to
// [0, max] when imm[RELU_BIT] (relu) is set. A disabled op passes x unchanged.
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
    input  wire [OP_W-1:0]     op,
    input  wire                use_imm,
    input  wire [AW-1:0]       imm,  // the sign-extended immediate
    input  wire [LANES*AW-1:0] x,    // ACC[d]
    input  wire [LANES*AW-1:0] s,    // ACC[s] (tensor mode)
    output reg  [LANES*AW-1:0] out
);
  localparam integer SW = $clog2(AW);  // shift amount bits; magnitudes saturate at AW - 1
  localparam signed [AW-1:0] HI = (1 << (OUT_W - 1)) - 1;
  localparam signed [AW-1:0] LO = -(1 << (OUT_W - 1));
  localparam integer WIDEST_SHIFT = AW - 1;
  localparam [SW-1:0] MAX_SHIFT = WIDEST_SHIFT[SW-1:0];
  localparam [OP_W-1:0] MIN_OP = OP_MIN[OP_W-1:0], MAX_OP = OP_MAX[OP_W-1:0],
                        ADD_OP = OP_ADD[OP_W-1:0], SHR_OP = OP_SHR[OP_W-1:0],
                        MUL_OP = OP_MUL[OP_W-1:0], REQ_OP = OP_REQ[OP_W-1:0];
  wire req = op == REQ_OP;
  wire signed [AW-1:0] req_lo = imm[RELU_BIT] ? {AW{1'b0}} : LO;
  wire [SW-1:0] req_shift = imm[REQ_SHIFT_BITS-1:0];
  integer n;
  reg signed [AW-1:0] a, b, sum, shifted, r;
  reg lt, neg, in_range;
  reg [SW-1:0] amount;
  always @(*) begin
    for (n = 0; n < LANES; n = n + 1) begin
      a = x[n*AW+:AW];
      b = use_imm ? imm : s[n*AW+:AW];
      lt = a < b;
      // |b| <= AW - 1 iff the bits above the amount are all sign (and b is not -2**SW)
      neg = b[AW-1];
      in_range = neg ? (&b[AW-1:SW] && |b[SW-1:0]) : !(|b[AW-1:SW]);
      amount = req ? req_shift : !in_range ? MAX_SHIFT : neg ? -b[SW-1:0] : b[SW-1:0];
      // one adder and one right shifter serve ADD/REQ and SHR/REQ
      sum = a + (req && use_imm ? {AW{1'b0}} : b);
      shifted = (req ? sum : a) >>> amount;
      case (op)
        MIN_OP: r = lt ? a : b;
        MAX_OP: r = lt ? b : a;
        ADD_OP: r = sum;
        SHR_OP: r = neg ? a << amount : shifted;
        MUL_OP: r = MUL_ENABLED != 0 ? a * b : a;
        REQ_OP: r = REQ_ENABLED == 0 ? a : shifted > HI ? HI : shifted < req_lo ? req_lo : shifted;
        default: r = a;
      endcase
      out[n*AW+:AW] = r;
    end
  end
endmodule

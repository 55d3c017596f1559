// Tensor ALU lanes: ACC[d] = op(ACC[d], y) with y the immediate or ACC[s] (docs/architecture.md,
// ISA semantics):
// MIN, MAX, ADD wrap; SHR takes a signed amount (>= 0 arithmetic right, < 0 left), magnitude
// saturating at width - 1; MUL only when MUL_ENABLED; REQ (requantize, only when REQ_ENABLED)
// clips (x + (use_imm ? 0 : ACC[s])) >>> imm[4:0] to the signed OUT_W-bit range, or to
// [0, max] when imm[5] (relu) is set. A disabled op passes x unchanged.
module vta_alu #(
    parameter integer LANES = 16,
    parameter integer AW = 32,
    parameter integer OUT_W = 8,
    parameter integer MUL_ENABLED = 0,
    parameter integer REQ_ENABLED = 0,
    parameter integer OP_MIN = 0,
    parameter integer OP_MAX = 1,
    parameter integer OP_ADD = 2,
    parameter integer OP_SHR = 3,
    parameter integer OP_MUL = 4,
    parameter integer OP_REQ = 5
) (
    input  wire [2:0]          op,
    input  wire                use_imm,
    input  wire [AW-1:0]       imm,  // the sign-extended immediate
    input  wire [LANES*AW-1:0] x,    // ACC[d]
    input  wire [LANES*AW-1:0] s,    // ACC[s] (tensor mode)
    output reg  [LANES*AW-1:0] out
);
  localparam integer SW = $clog2(AW);  // shift amount bits; magnitudes saturate at AW - 1
  localparam signed [AW-1:0] HI = (1 << (OUT_W - 1)) - 1;
  localparam signed [AW-1:0] LO = -(1 << (OUT_W - 1));
  wire req = op == OP_REQ[2:0];
  wire signed [AW-1:0] req_lo = imm[5] ? {AW{1'b0}} : LO;  // imm[5]: relu
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
      amount = req ? imm[4:0] : !in_range ? AW - 1 : neg ? -b[SW-1:0] : b[SW-1:0];
      // one adder and one right shifter serve ADD/REQ and SHR/REQ
      sum = a + (req && use_imm ? {AW{1'b0}} : b);
      shifted = (req ? sum : a) >>> amount;
      case (op)
        OP_MIN[2:0]: r = lt ? a : b;
        OP_MAX[2:0]: r = lt ? b : a;
        OP_ADD[2:0]: r = sum;
        OP_SHR[2:0]: r = neg ? a << amount : shifted;
        OP_MUL[2:0]: r = MUL_ENABLED != 0 ? a * b : a;
        OP_REQ[2:0]: r = REQ_ENABLED == 0 ? a : shifted > HI ? HI : shifted < req_lo ? req_lo : shifted;
        default: r = a;
      endcase
      out[n*AW+:AW] = r;
    end
  end
endmodule

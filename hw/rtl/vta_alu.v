// Tensor ALU lanes: ACC[d] = op(ACC[d], y) with y the immediate or ACC[s] (ARCHITECTURE.md):
// MIN, MAX, ADD wrap; SHR takes a signed amount (>= 0 arithmetic right, < 0 left), magnitude
// saturating at width - 1; MUL only when MUL_ENABLED, otherwise x passes unchanged.
module vta_alu #(
    parameter integer LANES = 16,
    parameter integer AW = 32,
    parameter integer MUL_ENABLED = 0,
    parameter integer OP_MIN = 0,
    parameter integer OP_MAX = 1,
    parameter integer OP_ADD = 2,
    parameter integer OP_SHR = 3,
    parameter integer OP_MUL = 4
) (
    input  wire [2:0]          op,
    input  wire [LANES*AW-1:0] x,
    input  wire [LANES*AW-1:0] y,
    output reg  [LANES*AW-1:0] out
);
  localparam integer SW = $clog2(AW);  // shift amount bits; magnitudes saturate at AW - 1
  integer n;
  reg signed [AW-1:0] a, b, r;
  reg lt, neg, in_range;
  reg [SW-1:0] amount;
  always @(*) begin
    for (n = 0; n < LANES; n = n + 1) begin
      a = x[n*AW+:AW];
      b = y[n*AW+:AW];
      lt = a < b;
      // |b| <= AW - 1 iff the bits above the amount are all sign (and b is not -2**SW)
      neg = b[AW-1];
      in_range = neg ? (&b[AW-1:SW] && |b[SW-1:0]) : !(|b[AW-1:SW]);
      amount = !in_range ? AW - 1 : neg ? -b[SW-1:0] : b[SW-1:0];
      case (op)
        OP_MIN[2:0]: r = lt ? a : b;
        OP_MAX[2:0]: r = lt ? b : a;
        OP_ADD[2:0]: r = a + b;
        OP_SHR[2:0]: r = neg ? a << amount : a >>> amount;
        OP_MUL[2:0]: r = MUL_ENABLED != 0 ? a * b : a;
        default: r = a;
      endcase
      out[n*AW+:AW] = r;
    end
  end
endmodule

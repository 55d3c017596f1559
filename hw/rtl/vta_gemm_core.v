`include "vta_config.vh"
// GEMM core: one (BATCH x BLOCK_IN) by (BLOCK_IN x BLOCK_OUT) int8 product per cycle, added to
// the int32 accumulator tile (wrap-around); reset gives zero. Pipelined in three stages:
//   1. inp, wgt -> the products, registered (in the DSP48s);
//   2. the products -> each output's dot product, registered;
//   3. acc + dot -> out, combinational (into the caller's result register).
// So acc and reset go with the inp and wgt presented two cycles earlier.
// Two output channels share one multiplier (the DSP48 int8 packing of Xilinx WP486): with
// W = w_hi * 2**16 + w_lo (25 bits), P = a * W holds a*w_lo in its low 16 bits (signed) and
// a*w_hi = (P >>> 16) + sign(a*w_lo). So BLOCK_OUT/2 multipliers per input lane; the 8+8-bit
// products are summed in IW + WW + log2(BLOCK_IN) + 1 bits, as in the reference HLS.
module vta_gemm_core #(
    parameter integer BATCH = `VTA_BATCH,
    parameter integer BLOCK_IN = `VTA_BLOCK_IN,
    parameter integer BLOCK_OUT = `VTA_BLOCK_OUT,
    parameter integer IW = `VTA_INP_WIDTH,
    parameter integer WW = `VTA_WGT_WIDTH,
    parameter integer AW = `VTA_ACC_WIDTH
) (
    input  wire                           clk,
    input  wire [BATCH*BLOCK_IN*IW-1:0]   inp,   // [b][ic], stage 1
    input  wire [BLOCK_OUT*BLOCK_IN*WW-1:0] wgt, // [oc][ic], stage 1
    input  wire                           reset, // stage 3
    input  wire [BATCH*BLOCK_OUT*AW-1:0]  acc,   // [b][oc], stage 3
    output reg  [BATCH*BLOCK_OUT*AW-1:0]  out    // [b][oc], stage 3
);
  localparam integer SHIFT = IW + WW;  // holds one signed product (|a*w| <= 2**(IW+WW-2))
  localparam integer PW = WW + SHIFT + 1;  // the packed weight pair
  localparam integer PRODW = IW + WW;  // one product
  localparam integer DW = IW + WW + $clog2(BLOCK_IN) + 1;
  localparam integer PAIRS = BATCH * (BLOCK_OUT / 2) * BLOCK_IN;  // multipliers
  integer b, oc, ic;

  // Stage 1: the packed products.
  reg signed [WW-1:0] w_lo, w_hi;
  reg signed [IW-1:0] act[0:PAIRS-1];
  reg signed [PW-1:0] pair[0:PAIRS-1];
  always @(*) begin
    for (b = 0; b < BATCH; b = b + 1) begin
      for (oc = 0; oc < BLOCK_OUT; oc = oc + 2) begin
        for (ic = 0; ic < BLOCK_IN; ic = ic + 1) begin
          w_lo = wgt[(oc*BLOCK_IN+ic)*WW+:WW];
          w_hi = wgt[((oc+1)*BLOCK_IN+ic)*WW+:WW];
          act[(b*(BLOCK_OUT/2)+oc/2)*BLOCK_IN+ic] = inp[(b*BLOCK_IN+ic)*IW+:IW];
          pair[(b*(BLOCK_OUT/2)+oc/2)*BLOCK_IN+ic] =
              {w_hi[WW-1], w_hi, {SHIFT{1'b0}}} + {{(PW - WW) {w_lo[WW-1]}}, w_lo};
        end
      end
    end
  end
  // |a * W| < 2**(IW + PW - 2): a product's top bit only repeats its sign
  /* verilator lint_off UNUSEDSIGNAL */
  reg signed [IW+PW-1:0] prod[0:PAIRS-1];
  /* verilator lint_on UNUSEDSIGNAL */
  integer n;
  always @(posedge clk) begin
    // IW x PW signed multiplies (one DSP48 each), their operands widened to the product
    /* verilator lint_off WIDTHEXPAND */
    for (n = 0; n < PAIRS; n = n + 1) prod[n] <= act[n] * pair[n];
    /* verilator lint_on WIDTHEXPAND */
  end

  // Stage 2: each output channel's dot product. The high products' corrections (the low
  // products' signs) are summed as one more term, so no adder precedes the adder tree.
  reg signed [SHIFT-1:0] lo;
  reg signed [PRODW-1:0] hi;
  reg signed [DW-1:0] dot_lo, dot_hi;
  reg signed [DW-1:0] dot_next[0:BATCH*BLOCK_OUT-1];
  reg signed [DW-1:0] dot[0:BATCH*BLOCK_OUT-1];
  always @(*) begin
    for (b = 0; b < BATCH; b = b + 1) begin
      for (oc = 0; oc < BLOCK_OUT; oc = oc + 2) begin
        dot_lo = 0;
        dot_hi = 0;
        for (ic = 0; ic < BLOCK_IN; ic = ic + 1) begin
          lo = prod[(b*(BLOCK_OUT/2)+oc/2)*BLOCK_IN+ic][SHIFT-1:0];
          hi = prod[(b*(BLOCK_OUT/2)+oc/2)*BLOCK_IN+ic][PRODW+SHIFT-1:SHIFT];
          dot_lo = dot_lo + {{(DW - SHIFT) {lo[SHIFT-1]}}, lo};
          dot_hi = dot_hi + {{(DW - PRODW) {hi[PRODW-1]}}, hi} + {{(DW - 1) {1'b0}}, lo[SHIFT-1]};
        end
        dot_next[b*BLOCK_OUT+oc] = dot_lo;
        dot_next[b*BLOCK_OUT+oc+1] = dot_hi;
      end
    end
  end
  always @(posedge clk) for (n = 0; n < BATCH * BLOCK_OUT; n = n + 1) dot[n] <= dot_next[n];

  // Stage 3: accumulate.
  reg signed [AW-1:0] sum;
  always @(*) begin
    for (n = 0; n < BATCH * BLOCK_OUT; n = n + 1) begin
      sum = acc[n*AW+:AW] + {{(AW - DW) {dot[n][DW-1]}}, dot[n]};
      out[n*AW+:AW] = reset ? {AW{1'b0}} : sum;
    end
  end
endmodule

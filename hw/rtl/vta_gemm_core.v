`include "vta_config.vh"
// GEMM core: one (BATCH x BLOCK_IN) by (BLOCK_IN x BLOCK_OUT) int8 product per cycle, added to
// the int32 accumulator tile (wrap-around). reset gives zero.
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
    input  wire                           reset,
    input  wire [BATCH*BLOCK_IN*IW-1:0]   inp,   // [b][ic]
    input  wire [BLOCK_OUT*BLOCK_IN*WW-1:0] wgt, // [oc][ic]
    input  wire [BATCH*BLOCK_OUT*AW-1:0]  acc,   // [b][oc]
    output reg  [BATCH*BLOCK_OUT*AW-1:0]  out
);
  localparam integer SHIFT = IW + WW;  // holds one signed product (|a*w| <= 2**(IW+WW-2))
  localparam integer PW = WW + SHIFT + 1;  // the packed weight pair
  localparam integer PRODW = IW + WW;  // one product
  localparam integer DW = IW + WW + $clog2(BLOCK_IN) + 1;
  integer b, oc, ic;
  reg signed [WW-1:0] w_lo, w_hi;
  reg signed [IW-1:0] a;
  reg signed [PW-1:0] w_pair;
  reg signed [SHIFT-1:0] lo;
  reg signed [PRODW-1:0] hi;
  reg signed [DW-1:0] dot_lo, dot_hi;
  reg signed [AW-1:0] sum_lo, sum_hi;
  // |a * W| < 2**(IW + PW - 2): the product's top bit only repeats its sign
  /* verilator lint_off UNUSEDSIGNAL */
  reg signed [IW+PW-1:0] p;
  /* verilator lint_on UNUSEDSIGNAL */
  always @(*) begin
    for (b = 0; b < BATCH; b = b + 1) begin
      for (oc = 0; oc < BLOCK_OUT; oc = oc + 2) begin
        dot_lo = 0;
        dot_hi = 0;
        for (ic = 0; ic < BLOCK_IN; ic = ic + 1) begin
          w_lo = wgt[(oc*BLOCK_IN+ic)*WW+:WW];
          w_hi = wgt[((oc+1)*BLOCK_IN+ic)*WW+:WW];
          a = inp[(b*BLOCK_IN+ic)*IW+:IW];
          w_pair = {w_hi[WW-1], w_hi, {SHIFT{1'b0}}} + {{(PW - WW) {w_lo[WW-1]}}, w_lo};
          // an IW x PW signed multiply (one DSP48), its operands widened to the product
          /* verilator lint_off WIDTHEXPAND */
          p = a * w_pair;
          /* verilator lint_on WIDTHEXPAND */
          lo = p[SHIFT-1:0];
          hi = p[PRODW+SHIFT-1:SHIFT] + {{(PRODW - 1) {1'b0}}, lo[SHIFT-1]};
          dot_lo = dot_lo + {{(DW - SHIFT) {lo[SHIFT-1]}}, lo};
          dot_hi = dot_hi + {{(DW - PRODW) {hi[PRODW-1]}}, hi};
        end
        sum_lo = acc[(b*BLOCK_OUT+oc)*AW+:AW] + {{(AW - DW) {dot_lo[DW-1]}}, dot_lo};
        sum_hi = acc[(b*BLOCK_OUT+oc+1)*AW+:AW] + {{(AW - DW) {dot_hi[DW-1]}}, dot_hi};
        out[(b*BLOCK_OUT+oc)*AW+:AW] = reset ? {AW{1'b0}} : sum_lo;
        out[(b*BLOCK_OUT+oc+1)*AW+:AW] = reset ? {AW{1'b0}} : sum_hi;
      end
    end
  end
endmodule

// GEMM core: one (BATCH x BLOCK_IN) by (BLOCK_IN x BLOCK_OUT) int8 product per cycle, added to
// the int32 accumulator tile (wrap-around). reset gives zero.
module vta_gemm_core #(
    parameter integer BATCH = 1,
    parameter integer BLOCK_IN = 16,
    parameter integer BLOCK_OUT = 16,
    parameter integer IW = 8,
    parameter integer WW = 8,
    parameter integer AW = 32
) (
    input  wire                           reset,
    input  wire [BATCH*BLOCK_IN*IW-1:0]   inp,   // [b][ic]
    input  wire [BLOCK_OUT*BLOCK_IN*WW-1:0] wgt, // [oc][ic]
    input  wire [BATCH*BLOCK_OUT*AW-1:0]  acc,   // [b][oc]
    output reg  [BATCH*BLOCK_OUT*AW-1:0]  out
);
  // The dot product of BLOCK_IN int8 pairs needs only IW + WW + log2(BLOCK_IN) bits (as in the
  // reference HLS); it is sign-extended once into the accumulator add.
  localparam integer DW = IW + WW + $clog2(BLOCK_IN) + 1;
  integer b, oc, ic;
  reg signed [DW-1:0] dot;
  reg signed [AW-1:0] sum;
  always @(*) begin
    for (b = 0; b < BATCH; b = b + 1) begin
      for (oc = 0; oc < BLOCK_OUT; oc = oc + 1) begin
        dot = 0;
        for (ic = 0; ic < BLOCK_IN; ic = ic + 1) begin
          dot = dot + $signed(inp[(b*BLOCK_IN+ic)*IW+:IW]) * $signed(wgt[(oc*BLOCK_IN+ic)*WW+:WW]);
        end
        sum = $signed(acc[(b*BLOCK_OUT+oc)*AW+:AW]) + dot;
        out[(b*BLOCK_OUT+oc)*AW+:AW] = reset ? {AW{1'b0}} : sum;
      end
    end
  end
endmodule

`include "vta_config.vh"
// One bank of on-chip SRAM: one write port, one synchronous read port (read-first), so
// synthesis infers a simple dual-port block RAM.
module vta_sram #(
    parameter integer W = `VTA_UOP_BITS,
    parameter integer AW = `VTA_LOG_UOP_DEPTH
) (
    input  wire          clk,
    input  wire          we,
    input  wire [AW-1:0] waddr,
    input  wire [W-1:0]  wdata,
    input  wire          re,
    input  wire [AW-1:0] raddr,
    output reg  [W-1:0]  rdata
);
  reg [W-1:0] mem[0:(1<<AW)-1];
  always @(posedge clk) begin
    if (we) mem[waddr] <= wdata;
    if (re) rdata <= mem[raddr];
  end
endmodule

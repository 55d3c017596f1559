`include "vta_config.vh"
// Command queue: first-word-fall-through FIFO. A word pushed in cycle c is at the head in c+1.
module vta_fifo #(
    parameter integer W = `VTA_INSN_BITS,
    parameter integer LOG_DEPTH = `VTA_LOG_CMD_QUEUE_DEPTH
) (
    input  wire         clk,
    input  wire         rst,
    input  wire         push,
    input  wire [W-1:0] din,
    output wire         full,
    input  wire         pop,
    output wire [W-1:0] dout,
    output wire         empty
);
  reg [W-1:0] mem[0:(1<<LOG_DEPTH)-1];
  reg [LOG_DEPTH-1:0] wr, rd;
  reg [LOG_DEPTH:0] count;
  wire do_push = push && !full;
  wire do_pop = pop && !empty;
  assign full  = count[LOG_DEPTH];
  assign empty = count == 0;
  assign dout  = mem[rd];
  always @(posedge clk) begin
    if (do_push) mem[wr] <= din;
    if (rst) begin
      wr <= 0;
      rd <= 0;
      count <= 0;
    end else begin
      if (do_push) wr <= wr + 1'b1;
      if (do_pop) rd <= rd + 1'b1;
      count <= count + {{LOG_DEPTH{1'b0}}, do_push} - {{LOG_DEPTH{1'b0}}, do_pop};
    end
  end
endmodule

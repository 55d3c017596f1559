`include "vta_config.vh"
// Command queue: first-word-fall-through FIFO. A word pushed in cycle c is at the head in c+1.
// The head is a register (the word goes there directly when the queue has nothing ahead of
// it), so a module decoding the head starts its cycle with the word, not behind a memory read.
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
    output reg  [W-1:0] dout,
    output wire         empty
);
  reg [W-1:0] mem[0:(1<<LOG_DEPTH)-1];  // the words behind the head, oldest at rd
  reg [LOG_DEPTH-1:0] wr, rd;
  reg [LOG_DEPTH:0] count;  // words in the queue, the head included
  reg behind;  // a word is in mem (count >= 2)
  wire do_push = push && !full;
  wire do_pop = pop && !empty;
  // the pushed word becomes the head when nothing else is (or stays) in the queue
  wire to_head = do_push && (empty || (do_pop && !behind));
  localparam [LOG_DEPTH:0] ONE = 1;
  wire [LOG_DEPTH:0] next_count = count + {{LOG_DEPTH{1'b0}}, do_push} - {{LOG_DEPTH{1'b0}}, do_pop};
  assign full  = count[LOG_DEPTH];
  assign empty = count == 0;
  always @(posedge clk) begin
    if (do_push && !to_head) mem[wr] <= din;
    if (to_head) dout <= din;
    else if (do_pop && behind) dout <= mem[rd];
    if (rst) begin
      wr <= 0;
      rd <= 0;
      count <= 0;
      behind <= 1'b0;
    end else begin
      if (do_push && !to_head) wr <= wr + 1'b1;
      if (do_pop && behind) rd <= rd + 1'b1;
      count <= next_count;
      behind <= next_count > ONE;
    end
  end
endmodule

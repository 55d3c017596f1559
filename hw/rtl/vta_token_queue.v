`include "vta_config.vh"
// Dependence-token queue. Tokens carry no data, so the queue is a saturating counter of
// capacity 2**LOG_DEPTH. A token pushed in cycle c can be popped in c+1.
module vta_token_queue #(
    parameter integer LOG_DEPTH = `VTA_LOG_TOKEN_QUEUE_DEPTH
) (
    input  wire clk,
    input  wire rst,
    input  wire push,
    input  wire pop,
    output wire full,
    output wire empty
);
  reg [LOG_DEPTH:0] count;
  wire do_push = push && !full;
  wire do_pop = pop && !empty;
  assign full  = count[LOG_DEPTH];
  assign empty = count == 0;
  always @(posedge clk) begin
    if (rst) count <= 0;
    else count <= count + {{LOG_DEPTH{1'b0}}, do_push} - {{LOG_DEPTH{1'b0}}, do_pop};
  end
endmodule

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
  // count + 1 and count - 1 are kept in registers beside count, so push and pop (late: they
  // come from the modules' decode) only select the next values
  reg [LOG_DEPTH:0] up, down;
  always @(posedge clk) begin
    if (rst) begin
      count <= 0;
      up <= 1;
      down <= {(LOG_DEPTH + 1) {1'b1}};
    end else if (do_push && !do_pop) begin
      count <= up;
      up <= up + 1'b1;
      down <= count;
    end else if (do_pop && !do_push) begin
      count <= down;
      down <= down - 1'b1;
      up <= count;
    end
  end
endmodule

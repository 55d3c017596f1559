`include "vta_config.vh"
// Walks the bus words of a 2-D DRAM transfer (rows of row_bytes bytes, row starts stride_bytes
// apart; docs/timing.md) one beat at a time: whether the current beat is its row's first, its
// row's last or the transfer's last, and at which byte of its beat the row starts and ends.
// A row's beat count depends only on its address modulo the bus width; the next row's address
// and beat count are computed while the current row runs, so no cycle adds a whole address to
// a row's length.
module vta_row_cursor #(
    parameter integer LOG_BB = `VTA_LOG_BUS_BYTES,
    parameter integer ADDR_W = `VTA_AXI_ADDR_BITS,
    parameter integer ROWS_W = `VTA_MEM_Y_SIZE_W
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              start,
    input  wire [ADDR_W-1:0] addr,
    input  wire [ADDR_W-1:0] row_bytes,
    input  wire [ROWS_W-1:0] rows,
    input  wire [ADDR_W-1:0] stride_bytes,
    input  wire              beat,        // the current beat is taken this cycle
    output wire              more,        // a beat remains
    output reg               row_first,   // the current beat is its row's first
    output wire              row_last,    // ... its row's last
    output wire              last,        // ... the transfer's last
    output reg  [LOG_BB-1:0] first_byte,  // the row's first byte within its first beat
    output reg  [LOG_BB-1:0] last_byte    // the row's last byte within its last beat
);
  reg [ROWS_W-1:0] rows_left;
  reg [ADDR_W-1:0] left_m1;  // beats of the row after the current beat
  reg [ADDR_W-1:0] n_m1, stride, next_row, next_m1;
  reg [LOG_BB-1:0] next_first, next_last;
  // the offset of a row's last byte from the start of its first beat
  function automatic [ADDR_W-1:0] row_end(input [LOG_BB-1:0] low, input [ADDR_W-1:0] bytes_m1);
    row_end = {{(ADDR_W - LOG_BB) {1'b0}}, low} + bytes_m1;
  endfunction
  wire [ADDR_W-1:0] row_bytes_m1 = row_bytes - 1'b1;
  wire [ADDR_W-1:0] end0 = row_end(addr[LOG_BB-1:0], row_bytes_m1);
  wire [ADDR_W-1:0] second_row = addr + stride_bytes;
  wire [ADDR_W-1:0] end1 = row_end(second_row[LOG_BB-1:0], row_bytes_m1);
  wire [ADDR_W-1:0] row_after = next_row + stride;
  wire [ADDR_W-1:0] end2 = row_end(row_after[LOG_BB-1:0], n_m1);
  assign more = rows_left != 0;
  assign row_last = left_m1 == 0;
  assign last = row_last && rows_left == 1;
  always @(posedge clk) begin
    if (rst) begin
      rows_left <= 0;
    end else if (start) begin
      rows_left <= row_bytes == 0 ? {ROWS_W{1'b0}} : rows;
      row_first <= 1'b1;
      first_byte <= addr[LOG_BB-1:0];
      last_byte <= end0[LOG_BB-1:0];
      left_m1 <= end0 >> LOG_BB;
      next_row <= second_row;
      next_first <= second_row[LOG_BB-1:0];
      next_last <= end1[LOG_BB-1:0];
      next_m1 <= end1 >> LOG_BB;
      n_m1 <= row_bytes_m1;
      stride <= stride_bytes;
    end else if (beat) begin
      row_first <= row_last;
      if (row_last) begin
        rows_left <= rows_left - 1'b1;
        first_byte <= next_first;
        last_byte <= next_last;
        left_m1 <= next_m1;
        next_row <= row_after;
        next_first <= row_after[LOG_BB-1:0];
        next_last <= end2[LOG_BB-1:0];
        next_m1 <= end2 >> LOG_BB;
      end else begin
        left_m1 <= left_m1 - 1'b1;
      end
    end
  end
endmodule

`include "vta_config.vh"
// Splits a 2-D DRAM transfer (rows of row_bytes bytes, row starts stride_bytes apart) into
// AXI bursts per docs/timing.md: each row covers the bus words floor(A/BB)..floor((A+n-1)/BB),
// cut into bursts of at most MAX_BEATS beats that never cross a PAGE_BYTES boundary. Rows follow
// each other back to back; one burst per req_valid && req_ready cycle.
module vta_burst_gen #(
    parameter integer LOG_BB = `VTA_LOG_BUS_BYTES,
    parameter integer MAX_BEATS = `VTA_MAX_BURST_BEATS,
    parameter integer PAGE_BYTES = `VTA_PAGE_BYTES,
    parameter integer ADDR_W = `VTA_AXI_ADDR_BITS,
    parameter integer ROWS_W = `VTA_MEM_Y_SIZE_W,
    parameter integer LEN_W = `VTA_AXI_LEN_BITS
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              start,
    input  wire [ADDR_W-1:0] addr,
    input  wire [ADDR_W-1:0] row_bytes,
    input  wire [ROWS_W-1:0] rows,
    input  wire [ADDR_W-1:0] stride_bytes,
    output wire              req_valid,
    output wire [ADDR_W-1:0] req_addr,
    output wire [LEN_W:0]    req_len,     // beats, 1..MAX_BEATS
    output wire              req_row_end, // this burst ends its row
    input  wire              req_ready
);
  localparam [ADDR_W-1:0] PAGE_WORDS = PAGE_BYTES >> LOG_BB;
  localparam [ADDR_W-1:0] MOST = MAX_BEATS;
  reg [ADDR_W-1:0] row_addr, nbytes, stride, off;
  reg [ROWS_W-1:0] rows_left;
  wire [ADDR_W-1:0] w0 = row_addr >> LOG_BB;
  wire [ADDR_W-1:0] w1 = (row_addr + nbytes - 1'b1) >> LOG_BB;
  wire [ADDR_W-1:0] cur = w0 + off;
  wire [ADDR_W-1:0] left = w1 - cur + 1'b1;
  wire [ADDR_W-1:0] to_page = PAGE_WORDS - (cur & (PAGE_WORDS - 1'b1));
  wire [ADDR_W-1:0] lim = left < to_page ? left : to_page;
  wire [ADDR_W-1:0] len = lim < MOST ? lim : MOST;
  assign req_valid = rows_left != 0;
  assign req_addr = cur << LOG_BB;
  assign req_len = len[LEN_W:0];
  assign req_row_end = len == left;
  always @(posedge clk) begin
    if (rst) begin
      rows_left <= 0;
    end else if (start) begin
      row_addr <= addr;
      nbytes <= row_bytes;
      stride <= stride_bytes;
      rows_left <= row_bytes == 0 ? {ROWS_W{1'b0}} : rows;
      off <= 0;
    end else if (req_valid && req_ready) begin
      if (req_row_end) begin
        rows_left <= rows_left - 1'b1;
        row_addr <= row_addr + stride;
        off <= 0;
      end else begin
        off <= off + len;
      end
    end
  end
endmodule

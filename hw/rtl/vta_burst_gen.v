`include "vta_config.vh"
// Splits a 2-D DRAM transfer (rows of row_bytes bytes, row starts stride_bytes apart) into
// AXI bursts per docs/timing.md: each row covers the bus words floor(A/BB)..floor((A+n-1)/BB),
// cut into bursts of at most MAX_BEATS beats that never cross a PAGE_BYTES boundary. Rows follow
// each other back to back; one burst per req_valid && req_ready cycle.
// For timing, no cycle adds or compares a whole address and a row's words: a row's word count
// depends only on its address modulo the bus width, and the next row's address and word count
// are computed while the current row issues.
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
    output wire [LEN_W-1:0]  req_len_m1,  // beats - 1 (AxLEN): bursts of 1..MAX_BEATS beats
    input  wire              req_ready
);
  localparam integer PW = $clog2(PAGE_BYTES >> LOG_BB);  // word offset within a page
  localparam integer CW = PW > LEN_W ? PW : LEN_W;  // a burst length - 1
  localparam integer MOST_M1 = MAX_BEATS - 1;
  localparam [CW-1:0] MOST = MOST_M1[CW-1:0];
  reg [ADDR_W-1:0] cur;       // word address of the next burst
  reg [ADDR_W-1:0] left_m1;   // words of the row not yet requested, minus 1
  reg [ADDR_W-1:0] next_row;  // byte address of the next row
  reg [ADDR_W-1:0] next_m1;   // words of the next row, minus 1
  reg [ADDR_W-1:0] n_m1, stride;
  reg [ROWS_W-1:0] rows_left;
  // words - 1 of a row of n_m1 + 1 bytes at an address with these low bits
  function automatic [ADDR_W-1:0] words_m1(input [LOG_BB-1:0] low, input [ADDR_W-1:0] bytes_m1);
    words_m1 = ({{(ADDR_W - LOG_BB) {1'b0}}, low} + bytes_m1) >> LOG_BB;
  endfunction
  // The longest burst from a word address, less one: to the page end, at most MAX_BEATS. It is
  // registered with cur (cap_m1), so a burst's length does not wait for this comparison.
  function automatic [CW-1:0] longest_m1(input [PW-1:0] word);  // the word's offset in its page
    reg [CW-1:0] to_page_m1;
    begin
      to_page_m1 = {{(CW - PW) {1'b0}}, ~word};
      longest_m1 = to_page_m1 < MOST ? to_page_m1 : MOST;
    end
  endfunction
  reg [CW-1:0] cap_m1;
  wire [ADDR_W-1:0] cap_m1_wide = {{(ADDR_W - CW) {1'b0}}, cap_m1};
  wire [ADDR_W-1:0] cur_next = cur + cap_m1_wide + 1'b1;
  wire row_end = left_m1 <= cap_m1_wide;
  assign req_valid = rows_left != 0;
  assign req_addr = cur << LOG_BB;
  assign req_len_m1 = row_end ? left_m1[LEN_W-1:0] : cap_m1[LEN_W-1:0];
  wire [ADDR_W-1:0] row_bytes_m1 = row_bytes - 1'b1;
  wire [ADDR_W-1:0] second_row = addr + stride_bytes;
  wire [ADDR_W-1:0] row_after = next_row + stride;
  always @(posedge clk) begin
    if (rst) begin
      rows_left <= 0;
    end else if (start) begin
      cur <= addr >> LOG_BB;
      cap_m1 <= longest_m1(addr[LOG_BB+:PW]);
      left_m1 <= words_m1(addr[LOG_BB-1:0], row_bytes_m1);
      next_row <= second_row;
      next_m1 <= words_m1(second_row[LOG_BB-1:0], row_bytes_m1);
      n_m1 <= row_bytes_m1;
      stride <= stride_bytes;
      rows_left <= row_bytes == 0 ? {ROWS_W{1'b0}} : rows;
    end else if (req_valid && req_ready) begin
      if (row_end) begin
        rows_left <= rows_left - 1'b1;
        cur <= next_row >> LOG_BB;
        cap_m1 <= longest_m1(next_row[LOG_BB+:PW]);
        left_m1 <= next_m1;
        next_row <= row_after;
        next_m1 <= words_m1(row_after[LOG_BB-1:0], n_m1);
      end else begin
        cur <= cur_next;
        cap_m1 <= longest_m1(cur_next[PW-1:0]);
        left_m1 <= left_m1 - cap_m1_wide - 1'b1;
      end
    end
  end
endmodule

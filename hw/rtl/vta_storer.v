// 2-D strided store of buffer elements to DRAM (docs/timing.md STORE): row y copies x_size
// elements from buffer index sram_base + y*x_size to DRAM element dram_base + y*x_stride.
// Bursts are requested one per cycle (at most MAX_OUT unanswered); a data beat leaves in a cycle
// after its burst was requested, one per cycle; `done` is high in the cycle the last write
// response arrives. The buffer is read one beat ahead through its synchronous read port.
module vta_storer #(
    parameter integer LOG_EB = 4,
    parameter integer LOG_BB = 3,
    parameter integer AW = 11,
    parameter integer MAX_BEATS = 16,
    parameter integer PAGE_BYTES = 4096,
    parameter integer MAX_OUT = 4,
    parameter integer OUT_W = 3,
    // derived
    parameter integer EW = 8 << LOG_EB,
    parameter integer BW = 8 << LOG_BB,
    parameter integer BB = 1 << LOG_BB,
    parameter integer LOG_LANES = LOG_BB > LOG_EB ? LOG_BB - LOG_EB : 0,
    parameter integer LANES = 1 << LOG_LANES,
    parameter integer LOG_BEATS = LOG_EB > LOG_BB ? LOG_EB - LOG_BB : 0,
    parameter integer BAW = AW - LOG_LANES
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 start,
    input  wire [15:0]          sram_base,
    input  wire [31:0]          dram_base,
    input  wire [15:0]          y_size,
    input  wire [15:0]          x_size,
    input  wire [15:0]          x_stride,
    output wire                 done,
    output wire                 awvalid,
    input  wire                 awready,
    output wire [31:0]          awaddr,
    output wire [7:0]           awlen,
    output wire                 wvalid,
    input  wire                 wready,
    output reg  [BW-1:0]        wdata,
    output reg  [BB-1:0]        wstrb,
    output wire                 wlast,
    input  wire                 bvalid,
    output wire                 bready,
    output reg  [LANES-1:0]     re,
    output reg  [LANES*BAW-1:0] raddr,
    input  wire [LANES*EW-1:0]  rdata
);
  wire [LOG_EB+15:0] row_bytes16 = {x_size, {LOG_EB{1'b0}}};
  wire [LOG_EB+15:0] stride_bytes16 = {x_stride, {LOG_EB{1'b0}}};
  wire [31:0] row_bytes = {{(16-LOG_EB){1'b0}}, row_bytes16};
  wire [31:0] stride_bytes = {{(16-LOG_EB){1'b0}}, stride_bytes16};
  wire [31:0] dram_addr = dram_base << LOG_EB;

  // ------------------------------------------------------------------ requests (AW, B)
  reg [OUT_W-1:0] outstanding;
  reg [31:0] aw_count;  // bursts requested so far in this instruction
  wire a_valid, w_valid;
  wire [8:0] a_len_unused, w_len;
  wire a_row_end_unused, w_row_end_unused;
  wire can_issue = outstanding < MAX_OUT;
  vta_burst_gen #(
      .LOG_BB(LOG_BB),
      .MAX_BEATS(MAX_BEATS),
      .PAGE_BYTES(PAGE_BYTES)
  ) agen (
      .clk(clk),
      .rst(rst),
      .start(start),
      .addr(dram_addr),
      .row_bytes(row_bytes),
      .rows(y_size),
      .stride_bytes(stride_bytes),
      .req_valid(a_valid),
      .req_addr(awaddr),
      .req_len(a_len_unused),
      .req_row_end(a_row_end_unused),
      .req_ready(awready && can_issue)
  );
  assign awvalid = a_valid && can_issue;
  assign awlen = a_len_unused[7:0] - 8'd1;
  assign bready = 1'b1;
  wire aw_fire = awvalid && awready;
  assign done = bvalid && !a_valid && outstanding == 1;
  always @(posedge clk) begin
    if (rst) outstanding <= 0;
    else outstanding <= outstanding + {{(OUT_W-1){1'b0}}, aw_fire} - {{(OUT_W-1){1'b0}}, bvalid};
    if (start) aw_count <= 0;
    else if (aw_fire) aw_count <= aw_count + 1;
  end

  // ------------------------------------------------------------------ write data (W)
  // A second burst generator replays the burst sequence to place WLAST.
  reg [31:0] w_burst, w_in_burst;
  reg beat_valid;  // the W stage holds a beat
  wire w_fire = wvalid && wready;
  vta_burst_gen #(
      .LOG_BB(LOG_BB),
      .MAX_BEATS(MAX_BEATS),
      .PAGE_BYTES(PAGE_BYTES)
  ) wgen (
      .clk(clk),
      .rst(rst),
      .start(start),
      .addr(dram_addr),
      .row_bytes(row_bytes),
      .rows(y_size),
      .stride_bytes(stride_bytes),
      .req_valid(w_valid),
      .req_addr(),
      .req_len(w_len),
      .req_row_end(w_row_end_unused),
      .req_ready(w_fire && wlast)
  );
  assign wlast = w_in_burst == {23'd0, w_len} - 1;
  assign wvalid = beat_valid && w_burst < aw_count;
  always @(posedge clk) begin
    if (start) begin
      w_burst <= 0;
      w_in_burst <= 0;
    end else if (w_fire) begin
      w_burst <= wlast ? w_burst + 1 : w_burst;
      w_in_burst <= wlast ? 0 : w_in_burst + 1;
    end
  end

  // Read cursor: the next beat to fetch from the buffer.
  reg [31:0] c_row_addr, c_beat, nbytes, stride;
  reg [15:0] c_rows_left, r_xs;
  reg [31:0] sidx, srow;  // buffer index of the next element / of the current row's first
  reg [LOG_BEATS:0] sub;
  wire [31:0] c_w0 = c_row_addr >> LOG_BB;
  wire [31:0] c_w1 = (c_row_addr + nbytes - 1) >> LOG_BB;
  wire [31:0] last_byte = c_row_addr + nbytes - 1;
  wire row_last_beat = c_beat == c_w1 - c_w0;
  wire more = c_rows_left != 0;
  wire advance = (!beat_valid || w_fire) && more;
  wire [LOG_LANES:0] first_lane, last_lane;
  generate
    if (LOG_LANES > 0) begin : g_lanes
      assign first_lane = c_beat == 0 ? {1'b0, c_row_addr[LOG_BB-1:LOG_EB]} : 0;
      assign last_lane = row_last_beat ? {1'b0, last_byte[LOG_BB-1:LOG_EB]} : LANES - 1;
    end else begin : g_one
      assign first_lane = 0;
      assign last_lane = 0;
    end
  endgenerate
  wire elem_end = LOG_LANES > 0 || sub == (1 << LOG_BEATS) - 1;

  integer k;
  reg [LOG_LANES:0] lane;
  reg [31:0] idx;
  always @(*) begin
    re = 0;
    raddr = 0;
    lane = 0;
    idx = 0;
    if (advance && sub == 0) begin
      for (k = 0; k < LANES; k = k + 1) begin
        lane = (k - sidx[LOG_LANES:0] + first_lane) & (LANES - 1);
        idx = sidx + lane - first_lane;
        if (lane >= first_lane && lane <= last_lane) begin
          re[k] = 1'b1;
          raddr[k*BAW+:BAW] = idx[LOG_LANES+:BAW];
        end
      end
    end
  end

  // W stage: the beat's lane range, sub-beat and the low bits of its first buffer index.
  reg [LOG_LANES:0] b_first, b_last, b_sidx;
  reg [LOG_BEATS:0] b_sub;
  integer l;
  reg [LOG_LANES:0] bank;
  always @(*) begin
    wdata = 0;
    wstrb = 0;
    bank = 0;
    for (l = 0; l < LANES; l = l + 1) begin
      if (l >= b_first && l <= b_last) begin
        bank = (b_sidx + l - b_first) & (LANES - 1);  // bank holding lane l
        wstrb[l*(BB/LANES)+:(BB/LANES)] = {(BB / LANES) {1'b1}};
        if (LOG_LANES > 0) wdata[l*(BW/LANES)+:(BW/LANES)] = rdata[bank*EW+:(BW/LANES)];
        else wdata = rdata[b_sub*BW+:BW];
      end
    end
  end

  always @(posedge clk) begin
    if (rst) begin
      beat_valid <= 1'b0;
      c_rows_left <= 0;
    end else if (start) begin
      beat_valid <= 1'b0;
      c_row_addr <= dram_addr;
      nbytes <= row_bytes;
      stride <= stride_bytes;
      c_beat <= 0;
      c_rows_left <= row_bytes == 0 ? 16'd0 : y_size;
      r_xs <= x_size;
      sidx <= {16'd0, sram_base};
      srow <= {16'd0, sram_base};
      sub <= 0;
    end else begin
      if (w_fire && !advance) beat_valid <= 1'b0;
      if (advance) begin
        beat_valid <= 1'b1;
        b_first <= first_lane;
        b_last <= last_lane;
        b_sidx <= sidx[LOG_LANES:0];
        b_sub <= sub;
        sub <= elem_end ? 0 : sub + 1'b1;
        if (row_last_beat) begin
          c_beat <= 0;
          c_row_addr <= c_row_addr + stride;
          c_rows_left <= c_rows_left - 1'b1;
          srow <= srow + r_xs;
          sidx <= srow + r_xs;
        end else begin
          c_beat <= c_beat + 1;
          if (elem_end) sidx <= sidx + (last_lane - first_lane + 1);
        end
      end
    end
  end
endmodule

`include "vta_config.vh"
// 2-D strided store of buffer elements to DRAM (docs/timing.md STORE): row y copies x_size
// elements from buffer index sram_base + y*x_size to DRAM element dram_base + y*x_stride.
// Bursts are requested one per cycle (at most MAX_OUT unanswered); a data beat leaves in a cycle
// after its burst was requested, one per cycle; `done` is high in the cycle the last write
// response arrives. The buffer is read one beat ahead through its synchronous read port.
module vta_storer #(
    parameter integer LOG_EB = `VTA_LOG_OUT_ELEM_BYTES,
    parameter integer LOG_BB = `VTA_LOG_BUS_BYTES,
    parameter integer AW = `VTA_LOG_OUT_DEPTH,
    parameter integer MAX_BEATS = `VTA_MAX_BURST_BEATS,
    parameter integer PAGE_BYTES = `VTA_PAGE_BYTES,
    parameter integer MAX_OUT = `VTA_MAX_OUTSTANDING,
    parameter integer OUT_W = `VTA_LOG_MAX_OUTSTANDING,
    parameter integer ADDR_W = `VTA_AXI_ADDR_BITS,
    parameter integer LEN_W = `VTA_AXI_LEN_BITS,
    parameter integer SRAM_W = `VTA_MEM_SRAM_BASE_W,
    parameter integer DRAM_W = `VTA_MEM_DRAM_BASE_W,
    parameter integer SIZE_W = `VTA_MEM_X_SIZE_W,  // y_size, x_size and x_stride
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
    // buffer indices wrap at the buffer depth: only the low AW bits of sram_base matter
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [SRAM_W-1:0]    sram_base,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [DRAM_W-1:0]    dram_base,
    input  wire [SIZE_W-1:0]    y_size,
    input  wire [SIZE_W-1:0]    x_size,
    input  wire [SIZE_W-1:0]    x_stride,
    output wire                 done,
    output wire                 awvalid,
    input  wire                 awready,
    output wire [ADDR_W-1:0]    awaddr,
    output wire [LEN_W-1:0]     awlen,
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
  localparam integer BYTES_W = SIZE_W + LOG_EB;  // a row or stride in bytes
  localparam [OUT_W-1:0] MOST = MAX_OUT[OUT_W-1:0];
  localparam integer LAST_LANE = LANES - 1;
  localparam integer LAST_BEAT = (1 << LOG_BEATS) - 1;
  localparam [LOG_LANES:0] LANE_MASK = LAST_LANE[LOG_LANES:0];
  localparam [LOG_BEATS:0] LAST_SUB = LAST_BEAT[LOG_BEATS:0];
  localparam integer LANE_BYTES = BB / LANES;  // bytes of one lane of a beat
  localparam integer LANE_BITS = BW / LANES;
  wire [ADDR_W-1:0] row_bytes = {{(ADDR_W - BYTES_W) {1'b0}}, x_size, {LOG_EB{1'b0}}};
  wire [ADDR_W-1:0] stride_bytes = {{(ADDR_W - BYTES_W) {1'b0}}, x_stride, {LOG_EB{1'b0}}};
  wire [ADDR_W-1:0] dram_addr = dram_base << LOG_EB;  // byte addresses wrap at the AXI width

  // ------------------------------------------------------------------ requests (AW, B)
  reg [OUT_W-1:0] outstanding;  // bursts requested and not yet answered
  reg [OUT_W-1:0] unwritten;    // bursts requested whose data has not all left
  wire a_valid;
  wire can_issue = outstanding < MOST;
  vta_burst_gen #(
      .LOG_BB(LOG_BB), .MAX_BEATS(MAX_BEATS), .PAGE_BYTES(PAGE_BYTES), .ADDR_W(ADDR_W),
      .ROWS_W(SIZE_W), .LEN_W(LEN_W)
  ) agen (
      .clk(clk), .rst(rst), .start(start), .addr(dram_addr), .row_bytes(row_bytes),
      .rows(y_size), .stride_bytes(stride_bytes), .req_valid(a_valid), .req_addr(awaddr),
      .req_len_m1(awlen), .req_ready(awready && can_issue)
  );
  assign awvalid = a_valid && can_issue;
  assign bready = 1'b1;
  wire aw_fire = awvalid && awready;
  assign done = bvalid && !a_valid && outstanding == 1;

  // ------------------------------------------------------------------ write data (W)
  reg [LEN_W-1:0] w_in_burst;
  wire [LEN_W-1:0] w_len_m1;
  reg beat_valid;  // the W stage holds a beat
  wire w_fire = wvalid && wready;
  wire w_burst_end = w_fire && wlast;
  always @(posedge clk) begin
    if (rst || start) begin
      outstanding <= 0;
      unwritten <= 0;
    end else begin
      outstanding <= outstanding + {{(OUT_W-1){1'b0}}, aw_fire} - {{(OUT_W-1){1'b0}}, bvalid};
      unwritten <= unwritten + {{(OUT_W-1){1'b0}}, aw_fire} - {{(OUT_W-1){1'b0}}, w_burst_end};
    end
  end
  // A second burst generator replays the burst sequence to place WLAST; its addresses and valid
  // are those of the requests already issued.
  /* verilator lint_off PINCONNECTEMPTY */
  vta_burst_gen #(
      .LOG_BB(LOG_BB), .MAX_BEATS(MAX_BEATS), .PAGE_BYTES(PAGE_BYTES), .ADDR_W(ADDR_W),
      .ROWS_W(SIZE_W), .LEN_W(LEN_W)
  ) wgen (
      .clk(clk), .rst(rst), .start(start), .addr(dram_addr), .row_bytes(row_bytes),
      .rows(y_size), .stride_bytes(stride_bytes), .req_valid(), .req_addr(),
      .req_len_m1(w_len_m1), .req_ready(w_burst_end)
  );
  /* verilator lint_on PINCONNECTEMPTY */
  assign wlast = w_in_burst == w_len_m1;
  assign wvalid = beat_valid && unwritten != 0;
  always @(posedge clk) begin
    if (start) w_in_burst <= 0;
    else if (w_fire) w_in_burst <= wlast ? 0 : w_in_burst + 1'b1;
  end

  // Read cursor: the next beat to fetch from the buffer.
  wire more, row_first, row_last_beat;
  // (rows start and end at element boundaries: the bits below an element are not needed)
  /* verilator lint_off UNUSEDSIGNAL */
  wire [LOG_BB-1:0] first_byte, last_byte;
  /* verilator lint_on UNUSEDSIGNAL */
  reg [AW-1:0] r_xs;
  reg [AW-1:0] sidx, srow;  // buffer index of the next element / of the current row's first
  reg [LOG_BEATS:0] sub;
  wire advance = (!beat_valid || w_fire) && more;
  // the transfer's last beat is not needed: the last write response ends the instruction
  /* verilator lint_off PINCONNECTEMPTY */
  vta_row_cursor #(
      .LOG_BB(LOG_BB), .ADDR_W(ADDR_W), .ROWS_W(SIZE_W)
  ) cursor (
      .clk(clk), .rst(rst), .start(start), .addr(dram_addr), .row_bytes(row_bytes),
      .rows(y_size), .stride_bytes(stride_bytes), .beat(advance), .more(more),
      .row_first(row_first), .row_last(row_last_beat), .last(), .first_byte(first_byte),
      .last_byte(last_byte)
  );
  /* verilator lint_on PINCONNECTEMPTY */
  wire [LOG_LANES:0] first_lane, last_lane;
  generate
    if (LOG_LANES > 0) begin : g_lanes
      assign first_lane = row_first ? {1'b0, first_byte[LOG_BB-1:LOG_EB]} : 0;
      assign last_lane = row_last_beat ? {1'b0, last_byte[LOG_BB-1:LOG_EB]} : LANE_MASK;
    end else begin : g_one
      // an element covers whole beats: rows start and end at beat boundaries
      /* verilator lint_off UNUSEDSIGNAL */
      wire [2*LOG_BB:0] unused = {row_first, first_byte, last_byte};
      /* verilator lint_on UNUSEDSIGNAL */
      assign first_lane = 0;
      assign last_lane = 0;
    end
  endgenerate
  wire elem_end = LOG_LANES > 0 || sub == LAST_SUB;
  wire [AW-1:0] elem_count = {{(AW - LOG_LANES - 1) {1'b0}}, last_lane - first_lane} + 1'b1;

  integer k;
  reg [LOG_LANES:0] lane;
  // an element's buffer index; its low LOG_LANES bits are the bank, k by construction
  /* verilator lint_off UNUSEDSIGNAL */
  reg [AW-1:0] idx;
  /* verilator lint_on UNUSEDSIGNAL */
  always @(*) begin
    re = 0;
    raddr = 0;
    lane = 0;
    idx = 0;
    if (advance && sub == 0) begin
      for (k = 0; k < LANES; k = k + 1) begin
        lane = (k[LOG_LANES:0] - sidx[LOG_LANES:0] + first_lane) & LANE_MASK;
        idx = sidx + {{(AW - LOG_LANES - 1) {1'b0}}, lane - first_lane};
        // (first_lane is the constant 0 when an element is at least a bus word wide)
        /* verilator lint_off UNSIGNED */
        if (lane >= first_lane && lane <= last_lane) begin
        /* verilator lint_on UNSIGNED */
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
      // (b_first is the constant 0 when an element is at least a bus word wide)
      /* verilator lint_off UNSIGNED */
      if (l[LOG_LANES:0] >= b_first && l[LOG_LANES:0] <= b_last) begin
      /* verilator lint_on UNSIGNED */
        bank = (b_sidx + l[LOG_LANES:0] - b_first) & LANE_MASK;  // bank holding lane l
        wstrb[l*LANE_BYTES+:LANE_BYTES] = {LANE_BYTES{1'b1}};
        if (LOG_LANES > 0) wdata[l*LANE_BITS+:LANE_BITS] = rdata[bank*EW+:LANE_BITS];
        else wdata = rdata[b_sub*BW+:BW];
      end
    end
  end

  always @(posedge clk) begin
    if (rst) begin
      beat_valid <= 1'b0;
    end else if (start) begin
      beat_valid <= 1'b0;
      r_xs <= x_size[AW-1:0];
      sidx <= sram_base[AW-1:0];
      srow <= sram_base[AW-1:0];
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
          srow <= srow + r_xs;
          sidx <= srow + r_xs;
        end else if (elem_end) sidx <= sidx + elem_count;
      end
    end
  end
endmodule

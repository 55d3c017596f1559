`include "vta_config.vh"
// 2-D strided load from DRAM into one on-chip buffer, with zero padding (docs/timing.md LOAD):
// after the decode cycle it writes every pad element, one per cycle, then streams the rows from
// DRAM. `done` is high in the instruction's last cycle. The buffer is split into LANES banks
// when an element is narrower than the bus, so a whole beat is written per cycle.
module vta_loader #(
    parameter integer LOG_EB = `VTA_LOG_INP_ELEM_BYTES,  // log2 element bytes
    parameter integer LOG_BB = `VTA_LOG_BUS_BYTES,       // log2 bus bytes
    parameter integer AW = `VTA_LOG_INP_DEPTH,           // log2 buffer depth (elements)
    parameter integer MAX_BEATS = `VTA_MAX_BURST_BEATS,
    parameter integer PAGE_BYTES = `VTA_PAGE_BYTES,
    parameter integer MAX_OUT = `VTA_MAX_OUTSTANDING,
    parameter integer OUT_W = `VTA_LOG_MAX_OUTSTANDING,
    parameter integer ADDR_W = `VTA_AXI_ADDR_BITS,
    parameter integer LEN_W = `VTA_AXI_LEN_BITS,
    parameter integer SRAM_W = `VTA_MEM_SRAM_BASE_W,     // instruction field widths
    parameter integer DRAM_W = `VTA_MEM_DRAM_BASE_W,
    parameter integer SIZE_W = `VTA_MEM_X_SIZE_W,        // y_size, x_size and x_stride
    parameter integer PAD_W = `VTA_MEM_X_PAD_0_W,
    // derived
    parameter integer EW = 8 << LOG_EB,
    parameter integer BW = 8 << LOG_BB,
    parameter integer LOG_LANES = LOG_BB > LOG_EB ? LOG_BB - LOG_EB : 0,
    parameter integer LANES = 1 << LOG_LANES,
    parameter integer LOG_BEATS = LOG_EB > LOG_BB ? LOG_EB - LOG_BB : 0,
    parameter integer BAW = AW - LOG_LANES
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 start,
    input  wire [SRAM_W-1:0]    sram_base,
    input  wire [DRAM_W-1:0]    dram_base,
    input  wire [SIZE_W-1:0]    y_size,
    input  wire [SIZE_W-1:0]    x_size,
    input  wire [SIZE_W-1:0]    x_stride,
    input  wire [PAD_W-1:0]     y_pad_0,
    input  wire [PAD_W-1:0]     y_pad_1,
    input  wire [PAD_W-1:0]     x_pad_0,
    input  wire [PAD_W-1:0]     x_pad_1,
    output wire                 done,
    output wire                 active,  // a pad element or a data beat is written this cycle
    output wire                 arvalid,
    input  wire                 arready,
    output wire [ADDR_W-1:0]    araddr,
    output wire [LEN_W-1:0]     arlen,
    input  wire                 rvalid,
    input  wire [BW-1:0]        rdata,
    input  wire                 rlast,
    output wire                 rready,
    output reg  [LANES-1:0]     we,
    output reg  [LANES*BAW-1:0] waddr,
    output reg  [LANES*EW-1:0]  wdata
);
  localparam [2:0] S_IDLE = 3'd0, S_PAD = 3'd1, S_STREAM = 3'd2;
  localparam [2:0] K_START = 3'd0, K_TOP = 3'd1, K_LEFT = 3'd2, K_RIGHT = 3'd3,
                   K_BOTTOM = 3'd4, K_NONE = 3'd5;
  localparam integer SEG_W = SIZE_W + PAD_W + 1;  // a pad segment: up to y_pad rows of a padded row
  localparam integer LAST_LANE = LANES - 1;
  localparam integer LAST_BEAT = (1 << LOG_BEATS) - 1;
  localparam [LOG_LANES:0] LANE_MASK = LAST_LANE[LOG_LANES:0];
  localparam [LOG_BEATS:0] LAST_SUB = LAST_BEAT[LOG_BEATS:0];

  reg [2:0] state;
  reg [SRAM_W-1:0] r_base;
  reg [SIZE_W-1:0] r_ys, r_xs, r_stride;
  reg [DRAM_W-1:0] r_dram;
  reg [PAD_W-1:0] r_yp0, r_yp1, r_xp0, r_xp1;
  // Field source: the inputs in the start cycle, the registers afterwards.
  // Buffer indices wrap at the buffer depth: only the low AW bits of sram_base matter.
  /* verilator lint_off UNUSEDSIGNAL */
  wire [SRAM_W-1:0] f_base = start ? sram_base : r_base;
  /* verilator lint_on UNUSEDSIGNAL */
  wire [SIZE_W-1:0] f_ys = start ? y_size : r_ys;
  wire [SIZE_W-1:0] f_xs = start ? x_size : r_xs;
  wire [SIZE_W-1:0] f_stride = start ? x_stride : r_stride;
  wire [DRAM_W-1:0] f_dram = start ? dram_base : r_dram;
  wire [PAD_W-1:0] f_yp0 = start ? y_pad_0 : r_yp0;
  wire [PAD_W-1:0] f_yp1 = start ? y_pad_1 : r_yp1;
  wire [PAD_W-1:0] f_xp0 = start ? x_pad_0 : r_xp0;
  wire [PAD_W-1:0] f_xp1 = start ? x_pad_1 : r_xp1;
  wire [SIZE_W:0] f_w = {{(SIZE_W + 1 - PAD_W) {1'b0}}, f_xp0} + {1'b0, f_xs} +
                        {{(SIZE_W + 1 - PAD_W) {1'b0}}, f_xp1};  // padded row width
  // The same quantities as buffer indices (AW bits, wrapping).
  wire [AW-1:0] a_base = f_base[AW-1:0];
  wire [AW-1:0] a_w = f_w[AW-1:0];
  wire [AW-1:0] a_xs = f_xs[AW-1:0];
  wire [AW-1:0] a_ys = f_ys[AW-1:0];
  wire [AW-1:0] a_yp0 = {{(AW - PAD_W) {1'b0}}, f_yp0};
  wire [AW-1:0] a_xp0 = {{(AW - PAD_W) {1'b0}}, f_xp0};

  // ------------------------------------------------------------------ pad segments
  reg [2:0] seg_kind;
  reg [SIZE_W-1:0] seg_row;
  reg [SEG_W-1:0] seg_left;
  reg [AW-1:0] pad_addr;
  reg [2:0] nk;
  reg [SIZE_W-1:0] nrow;
  reg [AW-1:0] naddr;
  reg [SEG_W-1:0] nlen;
  wire [SEG_W-1:0] top_len = f_yp0 * f_w;
  wire [SEG_W-1:0] bottom_len = f_yp1 * f_w;
  wire [SEG_W-1:0] left_len = {{(SEG_W - PAD_W) {1'b0}}, f_xp0};
  wire [SEG_W-1:0] right_len = {{(SEG_W - PAD_W) {1'b0}}, f_xp1};
  // The segment after (kind, row): top block, per data row left/right pads, bottom block.
  task automatic after_rows;
    begin
      if (f_yp1 != 0) begin
        nk = K_BOTTOM;
        naddr = a_base + (a_yp0 + a_ys) * a_w;
        nlen = bottom_len;
      end else nk = K_NONE;
    end
  endtask
  task automatic row_seg(input [SIZE_W-1:0] r);
    begin
      nrow = r;
      if (f_xp0 != 0) begin
        nk = K_LEFT;
        naddr = a_base + (a_yp0 + r[AW-1:0]) * a_w;
        nlen = left_len;
      end else begin
        nk = K_RIGHT;
        naddr = a_base + (a_yp0 + r[AW-1:0]) * a_w + a_xp0 + a_xs;
        nlen = right_len;
      end
    end
  endtask
  task automatic after_top;
    begin
      if (f_ys != 0 && (f_xp0 != 0 || f_xp1 != 0)) row_seg({SIZE_W{1'b0}});
      else after_rows();
    end
  endtask
  wire [2:0] cur_kind = start ? K_START : seg_kind;
  wire [SIZE_W-1:0] next_row = seg_row + 1'b1;
  wire more_rows = next_row < f_ys;
  always @(*) begin
    nk = K_NONE;
    nrow = seg_row;
    naddr = 0;
    nlen = 0;
    case (cur_kind)
      K_START:
      if (f_yp0 != 0) begin
        nk = K_TOP;
        naddr = a_base;
        nlen = top_len;
      end else after_top();
      K_TOP: after_top();
      K_LEFT:
      if (f_xp1 != 0) begin
        nk = K_RIGHT;
        naddr = a_base + (a_yp0 + seg_row[AW-1:0]) * a_w + a_xp0 + a_xs;
        nlen = right_len;
      end else if (more_rows) row_seg(next_row);
      else after_rows();
      K_RIGHT:
      if (more_rows) row_seg(next_row);
      else after_rows();
      default: nk = K_NONE;
    endcase
  end

  wire pad_write = state == S_PAD;
  wire pad_seg_end = pad_write && seg_left == 1;
  wire pads_over = (start && nk == K_NONE) || (pad_seg_end && nk == K_NONE);
  wire has_stream = f_ys != 0;
  wire stream_start = pads_over && has_stream;

  // ------------------------------------------------------------------ data stream
  localparam integer BYTES_W = SIZE_W + LOG_EB;  // a row or stride in bytes
  wire [ADDR_W-1:0] row_bytes = {{(ADDR_W - BYTES_W) {1'b0}}, f_xs, {LOG_EB{1'b0}}};
  wire [ADDR_W-1:0] stride_bytes = {{(ADDR_W - BYTES_W) {1'b0}}, f_stride, {LOG_EB{1'b0}}};
  wire [ADDR_W-1:0] dram_addr = f_dram << LOG_EB;  // byte addresses wrap at the AXI address width
  wire beat;
  vta_axi_reader #(
      .LOG_BB(LOG_BB),
      .MAX_BEATS(MAX_BEATS),
      .PAGE_BYTES(PAGE_BYTES),
      .MAX_OUT(MAX_OUT),
      .OUT_W(OUT_W),
      .ADDR_W(ADDR_W),
      .ROWS_W(SIZE_W),
      .LEN_W(LEN_W)
  ) reader (
      .clk(clk),
      .rst(rst),
      .start(stream_start),
      .addr(dram_addr),
      .row_bytes(row_bytes),
      .rows(f_ys),
      .stride_bytes(stride_bytes),
      .arvalid(arvalid),
      .arready(arready),
      .araddr(araddr),
      .arlen(arlen),
      .rvalid(rvalid),
      .rlast(rlast),
      .rready(rready),
      .client_ready(state == S_STREAM),
      .beat(beat)
  );

  reg [ADDR_W-1:0] c_row_addr, c_beat, row_nbytes, row_stride;
  reg [SIZE_W-1:0] c_rows_left;
  reg [AW-1:0] dst, drow;  // next element's buffer index; current data row's first element
  wire [ADDR_W-1:0] c_w0 = c_row_addr >> LOG_BB;
  // the row's last byte: its word ends the row, its lane is the row's last element
  wire [ADDR_W-1:0] last_byte = c_row_addr + row_nbytes - 1'b1;
  wire [ADDR_W-1:0] c_w1 = last_byte >> LOG_BB;
  wire row_last_beat = c_beat == c_w1 - c_w0;
  assign done = (pads_over && !has_stream) || (beat && row_last_beat && c_rows_left == 1);
  assign active = pad_write || beat;

  // Elements completed by this beat and the buffer index of the first one.
  wire [LOG_LANES:0] first_lane, last_lane;
  wire elem_done;
  wire [LANES*EW-1:0] beat_elems;  // element in lane l of this beat (or the assembled element)
  reg [LOG_BEATS:0] sub;
  generate
    if (LOG_LANES > 0) begin : g_lanes
      assign first_lane = c_beat == 0 ? {1'b0, c_row_addr[LOG_BB-1:LOG_EB]} : 0;
      assign last_lane = row_last_beat ? {1'b0, last_byte[LOG_BB-1:LOG_EB]} : LANE_MASK;
      assign elem_done = beat;
      assign beat_elems = rdata;
    end else begin : g_beats
      assign first_lane = 0;
      assign last_lane = 0;
      assign elem_done = beat && sub == LAST_SUB;
      if (LOG_BEATS > 0) begin : g_cat
        reg [EW-BW-1:0] shreg;  // earlier beats of the element, oldest in the low bits
        wire [EW-1:0] cat = {rdata, shreg};
        always @(posedge clk) if (beat) shreg <= cat[EW-1:BW];
        assign beat_elems = cat;
      end else begin : g_one
        assign beat_elems = rdata;
      end
    end
  endgenerate
  wire [AW-1:0] elem_count = {{(AW - LOG_LANES - 1) {1'b0}}, last_lane - first_lane} + 1'b1;

  // the bank of the pad element written this cycle (one-hot)
  wire [LANES-1:0] pad_bank;
  generate
    if (LOG_LANES > 0) begin : g_pad_banks
      assign pad_bank = {{(LANES - 1) {1'b0}}, 1'b1} << pad_addr[LOG_LANES-1:0];
    end else begin : g_pad_bank
      assign pad_bank = 1'b1;
    end
  endgenerate
  integer k;
  reg [LOG_LANES:0] lane;
  // an element's buffer index; its low LOG_LANES bits are the bank, k by construction
  /* verilator lint_off UNUSEDSIGNAL */
  reg [AW-1:0] idx;
  /* verilator lint_on UNUSEDSIGNAL */
  always @(*) begin
    we = 0;
    waddr = 0;
    wdata = 0;
    lane = 0;
    idx = 0;
    if (pad_write) begin
      we = pad_bank;
      for (k = 0; k < LANES; k = k + 1) waddr[k*BAW+:BAW] = pad_addr[LOG_LANES+:BAW];
    end else if (elem_done) begin
      for (k = 0; k < LANES; k = k + 1) begin
        // the beat lane whose element lands in bank k
        lane = (k[LOG_LANES:0] - dst[LOG_LANES:0] + first_lane) & LANE_MASK;
        idx = dst + {{(AW - LOG_LANES - 1) {1'b0}}, lane - first_lane};
        // (first_lane is the constant 0 when an element is at least a bus word wide)
        /* verilator lint_off UNSIGNED */
        if (lane >= first_lane && lane <= last_lane) begin
        /* verilator lint_on UNSIGNED */
          we[k] = 1'b1;
          waddr[k*BAW+:BAW] = idx[LOG_LANES+:BAW];
          wdata[k*EW+:EW] = beat_elems[lane*EW+:EW];
        end
      end
    end
  end

  always @(posedge clk) begin
    if (rst) begin
      state <= S_IDLE;
      seg_left <= 0;
    end else begin
      if (start) begin
        r_base <= sram_base;
        r_ys <= y_size;
        r_xs <= x_size;
        r_stride <= x_stride;
        r_dram <= dram_base;
        r_yp0 <= y_pad_0;
        r_yp1 <= y_pad_1;
        r_xp0 <= x_pad_0;
        r_xp1 <= x_pad_1;
      end
      // pad phase
      if ((start || pad_seg_end) && nk != K_NONE) begin
        state <= S_PAD;
        seg_kind <= nk;
        seg_row <= nrow;
        seg_left <= nlen;
        pad_addr <= naddr;
      end else if (pad_write) begin
        seg_left <= seg_left - 1'b1;
        pad_addr <= pad_addr + 1'b1;
      end
      // stream phase
      if (stream_start) begin
        state <= S_STREAM;
        c_row_addr <= dram_addr;
        row_nbytes <= row_bytes;
        row_stride <= stride_bytes;
        c_beat <= 0;
        c_rows_left <= f_ys;
        drow <= a_base + a_yp0 * a_w + a_xp0;
        dst <= a_base + a_yp0 * a_w + a_xp0;
        sub <= 0;
      end else if (beat) begin
        sub <= elem_done ? 0 : sub + 1'b1;
        if (row_last_beat) begin
          c_beat <= 0;
          c_row_addr <= c_row_addr + row_stride;
          c_rows_left <= c_rows_left - 1'b1;
          drow <= drow + a_w;
          dst <= drow + a_w;
          sub <= 0;
        end else begin
          c_beat <= c_beat + 1'b1;
          if (elem_done) dst <= dst + elem_count;
        end
      end
      if (done) state <= S_IDLE;
    end
  end
endmodule

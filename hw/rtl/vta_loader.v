`include "vta_config.vh"
// 2-D strided load from DRAM into one on-chip buffer, with zero padding (docs/timing.md LOAD):
// after the decode cycle it writes every pad element, one per cycle, then streams the rows from
// DRAM. `done` is high in the instruction's last cycle. The buffer is split into LANES banks
// when an element is narrower than the bus, so a whole beat is written per cycle.
// For timing, the decode cycle registers what the instruction's fields give (flags, widths,
// the one product) and no later cycle multiplies or adds more than two buffer indices.
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
  localparam [2:0] S_IDLE = 3'd0, S_TOP = 3'd1, S_LEFT = 3'd2, S_RIGHT = 3'd3, S_BOTTOM = 3'd4,
                   S_STREAM = 3'd5;
  localparam integer ST_W = 3;  // the state encoding
  localparam integer W_W = SIZE_W + 1;  // a padded row width
  localparam integer LAST_LANE = LANES - 1;
  localparam integer LAST_BEAT = (1 << LOG_BEATS) - 1;
  localparam [LOG_LANES:0] LANE_MASK = LAST_LANE[LOG_LANES:0];
  localparam [LOG_BEATS:0] LAST_SUB = LAST_BEAT[LOG_BEATS:0];

  reg [2:0] state;
  reg [SIZE_W-1:0] r_ys, r_xs, r_stride;
  reg [DRAM_W-1:0] r_dram;
  // Field source: the inputs while idle (so in the start cycle), the registers afterwards (the
  // data stream starts in either). Selecting by the state rather than by `start` keeps the
  // caller's accept logic off the paths into the row cursor.
  wire idle = state == S_IDLE;
  wire [SIZE_W-1:0] f_ys = idle ? y_size : r_ys;
  wire [SIZE_W-1:0] f_xs = idle ? x_size : r_xs;
  wire [SIZE_W-1:0] f_stride = idle ? x_stride : r_stride;
  wire [DRAM_W-1:0] f_dram = idle ? dram_base : r_dram;
  // Buffer indices wrap at the buffer depth: only the low AW bits of sram_base matter.
  /* verilator lint_off UNUSEDSIGNAL */
  wire [SRAM_W-1:0] base_field = sram_base;
  /* verilator lint_on UNUSEDSIGNAL */
  wire [AW-1:0] base = base_field[AW-1:0];
  wire [AW-1:0] a_xs = x_size[AW-1:0];
  wire [AW-1:0] a_ys = y_size[AW-1:0];
  wire [AW-1:0] a_xp0 = {{(AW - PAD_W) {1'b0}}, x_pad_0};

  // ------------------------------------------------------------------ padding
  // The pad elements are written one per cycle after the decode cycle, in the order top block,
  // then per data row its left and right pads, then bottom block: a cursor that moves on by
  // one, past a data row's x_size elements, or past all y_size data rows (the bottom block
  // when there are no side pads). That last jump, y_size * x_size, is the one product: it is
  // registered in the decode cycle and added to the cursor in the cycle that writes there.
  reg [AW-1:0] pad_addr;     // the cursor (before a pending jump past the data rows)
  reg [AW-1:0] skip;         // y_size * x_size
  reg skip_now;              // the cursor is pad_addr + skip this cycle
  reg [W_W-1:0] col_m1;      // elements left in this block row or side pad, less one
  reg [PAD_W-1:0] blk_m1;    // rows left in the top or bottom block, less one
  reg [SIZE_W-1:0] rows_m1;  // data rows left after the current one
  reg [W_W-1:0] r_w_m1;      // padded row width, less one
  reg [AW-1:0] r_w, r_xs1, drow0;
  reg [PAD_W-1:0] r_xp0_m1, r_xp1_m1, r_yp1_m1;
  reg [PAD_W:0] r_xp0_1;
  reg has_left, has_right, has_bottom;
  // decode-cycle quantities, from the inputs
  wire [W_W-1:0] w = {{(W_W - PAD_W) {1'b0}}, x_pad_0} + {1'b0, x_size} +
                     {{(W_W - PAD_W) {1'b0}}, x_pad_1};
  wire [W_W-1:0] w_m1 = w - 1'b1;
  wire s_left = y_size != 0 && x_pad_0 != 0;
  wire s_right = y_size != 0 && x_pad_1 != 0;
  wire [PAD_W-1:0] s_yp0_m1 = y_pad_0 - 1'b1;
  wire [PAD_W-1:0] s_yp1_m1 = y_pad_1 - 1'b1;
  wire [PAD_W-1:0] s_xp0_m1 = x_pad_0 - 1'b1;
  wire [PAD_W-1:0] s_xp1_m1 = x_pad_1 - 1'b1;
  // the cursor and where it moves
  wire [AW-1:0] cur = skip_now ? pad_addr + skip : pad_addr;
  wire [AW-1:0] cur1 = cur + 1'b1;
  wire [AW-1:0] cur1_row = cur + r_xs1;  // past the data of a row
  wire pad_write = state == S_TOP || state == S_LEFT || state == S_RIGHT || state == S_BOTTOM;
  wire side = state == S_LEFT || state == S_RIGHT;
  wire col_end = col_m1 == 0;
  wire seg_end = pad_write && col_end && (side || blk_m1 == 0);
  wire row_more = rows_m1 != 0;
  // The segment after the current one (S_IDLE: none): state, cursor, jump past the data rows.
  reg [ST_W-1:0] nstate;
  reg [AW-1:0] naddr;
  reg nskip;
  always @(*) begin
    nstate = S_IDLE;
    naddr = cur1;
    nskip = 1'b0;
    if (start) begin
      naddr = base;
      if (y_pad_0 != 0) nstate = S_TOP;
      else if (s_left) nstate = S_LEFT;
      else if (s_right) begin
        nstate = S_RIGHT;
        naddr = base + a_xs;
      end else if (y_pad_1 != 0) begin
        nstate = S_BOTTOM;
        nskip = 1'b1;
      end
    end else begin
      case (state)
        S_TOP:
        if (has_left) nstate = S_LEFT;
        else if (has_right) begin
          nstate = S_RIGHT;
          naddr = cur1_row;
        end else if (has_bottom) begin
          nstate = S_BOTTOM;
          nskip = 1'b1;
        end
        S_LEFT: begin
          naddr = cur1_row;
          if (has_right) nstate = S_RIGHT;
          else if (row_more) nstate = S_LEFT;
          else if (has_bottom) nstate = S_BOTTOM;
        end
        S_RIGHT:
        if (row_more) begin
          nstate = has_left ? S_LEFT : S_RIGHT;
          if (!has_left) naddr = cur1_row;
        end else if (has_bottom) nstate = S_BOTTOM;
        default: nstate = S_IDLE;
      endcase
    end
  end
  wire seg_next = start || seg_end;  // a new segment (or the end of the padding) is chosen
  wire pads_over = seg_next && nstate == S_IDLE;
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
  wire row_first, row_last_beat, last_beat;
  // (rows start and end at element boundaries: the bits below an element are not needed)
  /* verilator lint_off UNUSEDSIGNAL */
  wire [LOG_BB-1:0] first_byte, last_byte;
  /* verilator lint_on UNUSEDSIGNAL */
  // the reader's count of outstanding bursts says when there is more
  /* verilator lint_off PINCONNECTEMPTY */
  vta_row_cursor #(
      .LOG_BB(LOG_BB), .ADDR_W(ADDR_W), .ROWS_W(SIZE_W)
  ) cursor (
      .clk(clk), .rst(rst), .start(stream_start), .addr(dram_addr), .row_bytes(row_bytes),
      .rows(f_ys), .stride_bytes(stride_bytes), .beat(beat), .more(), .row_first(row_first),
      .row_last(row_last_beat), .last(last_beat), .first_byte(first_byte), .last_byte(last_byte)
  );
  /* verilator lint_on PINCONNECTEMPTY */
  reg [AW-1:0] dst, drow;  // next element's buffer index; current data row's first element
  assign done = (pads_over && !has_stream) || (beat && last_beat);
  assign active = pad_write || beat;

  // Elements completed by this beat and the buffer index of the first one.
  wire [LOG_LANES:0] first_lane, last_lane;
  wire elem_done;
  wire [LANES*EW-1:0] beat_elems;  // element in lane l of this beat (or the assembled element)
  reg [LOG_BEATS:0] sub;
  generate
    if (LOG_LANES > 0) begin : g_lanes
      assign first_lane = row_first ? {1'b0, first_byte[LOG_BB-1:LOG_EB]} : 0;
      assign last_lane = row_last_beat ? {1'b0, last_byte[LOG_BB-1:LOG_EB]} : LANE_MASK;
      assign elem_done = beat;
      assign beat_elems = rdata;
    end else begin : g_beats
      // an element covers whole beats: rows start and end at beat boundaries
      /* verilator lint_off UNUSEDSIGNAL */
      wire [2*LOG_BB:0] unused = {row_first, first_byte, last_byte};
      /* verilator lint_on UNUSEDSIGNAL */
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
      assign pad_bank = {{(LANES - 1) {1'b0}}, 1'b1} << cur[LOG_LANES-1:0];
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
      for (k = 0; k < LANES; k = k + 1) waddr[k*BAW+:BAW] = cur[LOG_LANES+:BAW];
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
    end else begin
      if (start) begin
        r_ys <= y_size;
        r_xs <= x_size;
        r_stride <= x_stride;
        r_dram <= dram_base;
        skip <= a_ys * a_xs;
        r_w <= w[AW-1:0];
        r_w_m1 <= w_m1;
        r_xs1 <= a_xs + 1'b1;
        r_xp0_1 <= {1'b0, x_pad_0} + 1'b1;
        r_xp0_m1 <= s_xp0_m1;
        r_xp1_m1 <= s_xp1_m1;
        r_yp1_m1 <= s_yp1_m1;
        has_left <= s_left;
        has_right <= s_right;
        has_bottom <= y_pad_1 != 0;
        rows_m1 <= y_size - 1'b1;
        drow0 <= base + a_xp0;
      end
      // pad phase
      if (seg_next) begin
        state <= nstate;
        pad_addr <= naddr;
        skip_now <= nskip;
        case (nstate)
          S_TOP: begin
            col_m1 <= w_m1;
            blk_m1 <= s_yp0_m1;
          end
          S_BOTTOM: begin
            col_m1 <= start ? w_m1 : r_w_m1;
            blk_m1 <= start ? s_yp1_m1 : r_yp1_m1;
          end
          S_LEFT: col_m1 <= {{(W_W - PAD_W) {1'b0}}, start ? s_xp0_m1 : r_xp0_m1};
          S_RIGHT: col_m1 <= {{(W_W - PAD_W) {1'b0}}, start ? s_xp1_m1 : r_xp1_m1};
          default: col_m1 <= 0;
        endcase
        if (state == S_TOP) drow0 <= pad_addr + {{(AW - PAD_W - 1) {1'b0}}, r_xp0_1};
        // a data row's side pads end with its right pad, or its left pad if it has none
        if (!start && (state == S_RIGHT || (state == S_LEFT && !has_right)))
          rows_m1 <= rows_m1 - 1'b1;
      end else if (pad_write) begin
        pad_addr <= cur1;
        skip_now <= 1'b0;
        if (col_end) begin
          col_m1 <= r_w_m1;
          blk_m1 <= blk_m1 - 1'b1;
        end else col_m1 <= col_m1 - 1'b1;
      end
      // stream phase
      if (stream_start) begin
        state <= S_STREAM;
        drow <= start ? base : state == S_TOP ? cur1 : drow0;
        dst <= start ? base : state == S_TOP ? cur1 : drow0;
        sub <= 0;
      end else if (beat) begin
        sub <= elem_done ? 0 : sub + 1'b1;
        if (row_last_beat) begin
          drow <= drow + r_w;
          dst <= drow + r_w;
          sub <= 0;
        end else if (elem_done) dst <= dst + elem_count;
      end
      if (done) state <= S_IDLE;
    end
  end
endmodule

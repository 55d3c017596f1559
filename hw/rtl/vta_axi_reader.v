`include "vta_config.vh"
// AXI4 read master for one client: issues the bursts of a 2-D transfer (vta_burst_gen), at most
// one request per cycle and at most MAX_OUT bursts outstanding (a burst stops being outstanding
// the cycle after its last beat). Read data is handed to the client as it arrives.
module vta_axi_reader #(
    parameter integer LOG_BB = `VTA_LOG_BUS_BYTES,
    parameter integer MAX_BEATS = `VTA_MAX_BURST_BEATS,
    parameter integer PAGE_BYTES = `VTA_PAGE_BYTES,
    parameter integer MAX_OUT = `VTA_MAX_OUTSTANDING,
    parameter integer OUT_W = `VTA_LOG_MAX_OUTSTANDING,
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
    // AXI4 read address / data channels
    output wire              arvalid,
    input  wire              arready,
    output wire [ADDR_W-1:0] araddr,
    output wire [LEN_W-1:0]  arlen,
    input  wire              rvalid,
    input  wire              rlast,
    output wire              rready,
    input  wire              client_ready,
    output wire              beat          // a data beat is taken this cycle
);
  localparam [OUT_W-1:0] MOST = MAX_OUT[OUT_W-1:0];
  reg [OUT_W-1:0] outstanding;
  wire can_issue = outstanding < MOST;
  wire req_valid;
  vta_burst_gen #(
      .LOG_BB(LOG_BB), .MAX_BEATS(MAX_BEATS), .PAGE_BYTES(PAGE_BYTES), .ADDR_W(ADDR_W),
      .ROWS_W(ROWS_W), .LEN_W(LEN_W)
  ) gen (
      .clk(clk), .rst(rst), .start(start), .addr(addr), .row_bytes(row_bytes), .rows(rows),
      .stride_bytes(stride_bytes), .req_valid(req_valid), .req_addr(araddr), .req_len_m1(arlen),
      .req_ready(arready && can_issue)
  );
  assign arvalid = req_valid && can_issue;
  assign rready = client_ready;
  assign beat = rvalid && rready;
  wire issue = arvalid && arready;
  wire retire = beat && rlast;
  always @(posedge clk) begin
    if (rst) outstanding <= 0;
    else outstanding <= outstanding + {{(OUT_W-1){1'b0}}, issue} - {{(OUT_W-1){1'b0}}, retire};
  end
endmodule

// AXI4 read master for one client: issues the bursts of a 2-D transfer (vta_burst_gen), at most
// one request per cycle and at most MAX_OUT bursts outstanding (a burst stops being outstanding
// the cycle after its last beat). Read data is handed to the client as it arrives.
module vta_axi_reader #(
    parameter integer LOG_BB = 3,
    parameter integer MAX_BEATS = 16,
    parameter integer PAGE_BYTES = 4096,
    parameter integer MAX_OUT = 4,
    parameter integer OUT_W = 3
) (
    input  wire        clk,
    input  wire        rst,
    input  wire        start,
    input  wire [31:0] addr,
    input  wire [31:0] row_bytes,
    input  wire [15:0] rows,
    input  wire [31:0] stride_bytes,
    output wire        idle,          // no burst left to request or outstanding
    // AXI4 read address / data channels
    output wire        arvalid,
    input  wire        arready,
    output wire [31:0] araddr,
    output wire [7:0]  arlen,
    input  wire        rvalid,
    input  wire        rlast,
    output wire        rready,
    input  wire        client_ready,
    output wire        beat          // a data beat is taken this cycle
);
  reg [OUT_W-1:0] outstanding;
  wire req_valid;
  wire [8:0] req_len;
  wire row_end_unused;
  wire can_issue = outstanding < MAX_OUT;
  vta_burst_gen #(
      .LOG_BB(LOG_BB),
      .MAX_BEATS(MAX_BEATS),
      .PAGE_BYTES(PAGE_BYTES)
  ) gen (
      .clk(clk),
      .rst(rst),
      .start(start),
      .addr(addr),
      .row_bytes(row_bytes),
      .rows(rows),
      .stride_bytes(stride_bytes),
      .req_valid(req_valid),
      .req_addr(araddr),
      .req_len(req_len),
      .req_row_end(row_end_unused),
      .req_ready(arready && can_issue)
  );
  assign arvalid = req_valid && can_issue;
  assign arlen = req_len[7:0] - 8'd1;
  assign rready = client_ready;
  assign beat = rvalid && rready;
  assign idle = !req_valid && outstanding == 0;
  wire issue = arvalid && arready;
  wire retire = beat && rlast;
  always @(posedge clk) begin
    if (rst) outstanding <= 0;
    else outstanding <= outstanding + {{(OUT_W-1){1'b0}}, issue} - {{(OUT_W-1){1'b0}}, retire};
  end
endmodule

`include "vta_config.vh"
// VTA accelerator top: AXI4-Lite control slave (register map of vta/regmap.py), one AXI4
// master per client (fetch, load, compute read; store write), the fetch/load/compute/store
// modules, three command queues, four dependence-token queues and the INP/WGT/OUT buffers.
module vta_top (
    input  wire        clk,
    input  wire        rst,
    // AXI4-Lite control slave
    input  wire        s_axil_awvalid,
    output wire        s_axil_awready,
    input  wire [`VTA_REG_ADDR_BITS-1:0] s_axil_awaddr,
    input  wire        s_axil_wvalid,
    output wire        s_axil_wready,
    input  wire [`VTA_REG_BITS-1:0] s_axil_wdata,
    output reg         s_axil_bvalid,
    input  wire        s_axil_bready,
    output wire [`VTA_AXI_RESP_BITS-1:0] s_axil_bresp,
    input  wire        s_axil_arvalid,
    output wire        s_axil_arready,
    input  wire [`VTA_REG_ADDR_BITS-1:0] s_axil_araddr,
    output reg         s_axil_rvalid,
    input  wire        s_axil_rready,
    output reg  [`VTA_REG_BITS-1:0] s_axil_rdata,
    output wire [`VTA_AXI_RESP_BITS-1:0] s_axil_rresp,
    // fetch read master
    output wire        m_fetch_arvalid,
    input  wire        m_fetch_arready,
    output wire [`VTA_AXI_ADDR_BITS-1:0] m_fetch_araddr,
    output wire [`VTA_AXI_LEN_BITS-1:0] m_fetch_arlen,
    input  wire        m_fetch_rvalid,
    output wire        m_fetch_rready,
    input  wire [`VTA_BUS_BITS-1:0] m_fetch_rdata,
    input  wire        m_fetch_rlast,
    input  wire [`VTA_AXI_RESP_BITS-1:0] m_fetch_rresp,
    // load read master
    output wire        m_load_arvalid,
    input  wire        m_load_arready,
    output wire [`VTA_AXI_ADDR_BITS-1:0] m_load_araddr,
    output wire [`VTA_AXI_LEN_BITS-1:0] m_load_arlen,
    input  wire        m_load_rvalid,
    output wire        m_load_rready,
    input  wire [`VTA_BUS_BITS-1:0] m_load_rdata,
    input  wire        m_load_rlast,
    input  wire [`VTA_AXI_RESP_BITS-1:0] m_load_rresp,
    // compute read master
    output wire        m_compute_arvalid,
    input  wire        m_compute_arready,
    output wire [`VTA_AXI_ADDR_BITS-1:0] m_compute_araddr,
    output wire [`VTA_AXI_LEN_BITS-1:0] m_compute_arlen,
    input  wire        m_compute_rvalid,
    output wire        m_compute_rready,
    input  wire [`VTA_BUS_BITS-1:0] m_compute_rdata,
    input  wire        m_compute_rlast,
    input  wire [`VTA_AXI_RESP_BITS-1:0] m_compute_rresp,
    // store write master
    output wire        m_store_awvalid,
    input  wire        m_store_awready,
    output wire [`VTA_AXI_ADDR_BITS-1:0] m_store_awaddr,
    output wire [`VTA_AXI_LEN_BITS-1:0] m_store_awlen,
    output wire        m_store_wvalid,
    input  wire        m_store_wready,
    output wire [`VTA_BUS_BITS-1:0] m_store_wdata,
    output wire [`VTA_BUS_BYTES-1:0] m_store_wstrb,
    output wire        m_store_wlast,
    input  wire        m_store_bvalid,
    output wire        m_store_bready,
    input  wire [`VTA_AXI_RESP_BITS-1:0] m_store_bresp,
    output wire        irq   // CONTROL.DONE
);
  // ------------------------------------------------------------------ registers
  localparam integer RB = `VTA_REG_BITS;
  localparam integer CB = `VTA_CYCLES_BITS;
  localparam [`VTA_AXI_RESP_BITS-1:0] OKAY = 0;
  reg [RB-1:0] insn_count;
  reg [`VTA_AXI_ADDR_BITS-1:0] insn_addr;
  reg [CB-1:0] cycles;
  reg running, done;
  reg [`VTA_STATUS_BITS-1:0] status;
  wire finish, bad_opcode, bad_memtype, bad_alu_op;
  wire wr = s_axil_awvalid && s_axil_wvalid && !s_axil_bvalid;
  assign s_axil_awready = wr;
  assign s_axil_wready = wr;
  assign s_axil_bresp = OKAY;
  assign s_axil_rresp = OKAY;
  assign s_axil_arready = !s_axil_rvalid;
  wire launch = wr && s_axil_awaddr == `VTA_REG_CONTROL && s_axil_wdata[`VTA_CONTROL_START_BIT];
  assign irq = done;
  wire axi_error = (m_fetch_rvalid && m_fetch_rready && m_fetch_rresp != OKAY) ||
                   (m_load_rvalid && m_load_rready && m_load_rresp != OKAY) ||
                   (m_compute_rvalid && m_compute_rready && m_compute_rresp != OKAY) ||
                   (m_store_bvalid && m_store_bready && m_store_bresp != OKAY);
  reg [RB-1:0] control;  // the CONTROL register's read value
  always @(*) begin
    control = 0;
    control[`VTA_CONTROL_DONE_BIT] = done;
    control[`VTA_CONTROL_BUSY_BIT] = running;
  end
  wire [`VTA_STATUS_BITS-1:0] errors;
  assign errors[`VTA_STATUS_BAD_OPCODE_BIT] = bad_opcode;
  assign errors[`VTA_STATUS_BAD_MEMTYPE_BIT] = bad_memtype;
  assign errors[`VTA_STATUS_BAD_ALU_OP_BIT] = bad_alu_op;
  assign errors[`VTA_STATUS_AXI_ERROR_BIT] = axi_error;

  always @(posedge clk) begin
    if (rst) begin
      s_axil_bvalid <= 1'b0;
      s_axil_rvalid <= 1'b0;
      running <= 1'b0;
      done <= 1'b0;
      status <= 0;
      cycles <= 0;
      insn_count <= 0;
      insn_addr <= 0;
    end else begin
      if (wr) begin
        s_axil_bvalid <= 1'b1;
        if (s_axil_awaddr == `VTA_REG_INSN_COUNT) insn_count <= s_axil_wdata;
        if (s_axil_awaddr == `VTA_REG_INSN_ADDR) insn_addr <= s_axil_wdata;
      end else if (s_axil_bready) s_axil_bvalid <= 1'b0;
      if (s_axil_arvalid && s_axil_arready) begin
        s_axil_rvalid <= 1'b1;
        case (s_axil_araddr)
          `VTA_REG_CONTROL: s_axil_rdata <= control;
          `VTA_REG_STATUS: s_axil_rdata <= {{(RB - `VTA_STATUS_BITS) {1'b0}}, status};
          `VTA_REG_INSN_COUNT: s_axil_rdata <= insn_count;
          `VTA_REG_INSN_ADDR: s_axil_rdata <= insn_addr;
          `VTA_REG_CYCLES_LO: s_axil_rdata <= cycles[RB-1:0];
          `VTA_REG_CYCLES_HI: s_axil_rdata <= cycles[CB-1:RB];
          `VTA_REG_HW_ID: s_axil_rdata <= `VTA_HW_ID_VALUE;
          default: s_axil_rdata <= 0;
        endcase
      end else if (s_axil_rready) s_axil_rvalid <= 1'b0;
      // Cycle 0 is the cycle after the START write; CYCLES stops at FINISH's end cycle.
      if (launch) begin
        running <= 1'b1;
        done <= 1'b0;
        status <= 0;
        cycles <= 0;
      end else begin
        if (running) cycles <= cycles + 1;
        if (finish) begin
          running <= 1'b0;
          done <= 1'b1;
        end
        status <= status | errors;
      end
    end
  end

  // ------------------------------------------------------------------ queues
  wire [`VTA_INSN_BITS-1:0] fetch_insn, load_insn, compute_insn, store_insn;
  wire load_q_push, compute_q_push, store_q_push, load_q_full, compute_q_full, store_q_full;
  wire load_q_pop, compute_q_pop, store_q_pop, load_q_empty, compute_q_empty, store_q_empty;
  vta_fifo load_q (
      .clk(clk), .rst(rst), .push(load_q_push), .din(fetch_insn), .full(load_q_full),
      .pop(load_q_pop), .dout(load_insn), .empty(load_q_empty)
  );
  vta_fifo compute_q (
      .clk(clk), .rst(rst), .push(compute_q_push), .din(fetch_insn), .full(compute_q_full),
      .pop(compute_q_pop), .dout(compute_insn), .empty(compute_q_empty)
  );
  vta_fifo store_q (
      .clk(clk), .rst(rst), .push(store_q_push), .din(fetch_insn), .full(store_q_full),
      .pop(store_q_pop), .dout(store_insn), .empty(store_q_empty)
  );
  wire l2g_push, l2g_pop, l2g_full, l2g_empty;
  wire g2l_push, g2l_pop, g2l_full, g2l_empty;
  wire g2s_push, g2s_pop, g2s_full, g2s_empty;
  wire s2g_push, s2g_pop, s2g_full, s2g_empty;
  vta_token_queue l2g (
      .clk(clk), .rst(rst), .push(l2g_push), .pop(l2g_pop), .full(l2g_full), .empty(l2g_empty)
  );
  vta_token_queue g2l (
      .clk(clk), .rst(rst), .push(g2l_push), .pop(g2l_pop), .full(g2l_full), .empty(g2l_empty)
  );
  vta_token_queue g2s (
      .clk(clk), .rst(rst), .push(g2s_push), .pop(g2s_pop), .full(g2s_full), .empty(g2s_empty)
  );
  vta_token_queue s2g (
      .clk(clk), .rst(rst), .push(s2g_push), .pop(s2g_pop), .full(s2g_full), .empty(s2g_empty)
  );

  // ------------------------------------------------------------------ modules
  vta_fetch fetch (
      .clk(clk), .rst(rst), .start(launch), .insn_addr(insn_addr), .insn_count(insn_count),
      .arvalid(m_fetch_arvalid), .arready(m_fetch_arready), .araddr(m_fetch_araddr),
      .arlen(m_fetch_arlen), .rvalid(m_fetch_rvalid), .rdata(m_fetch_rdata),
      .rlast(m_fetch_rlast), .rready(m_fetch_rready), .insn(fetch_insn),
      .load_push(load_q_push), .load_full(load_q_full),
      .compute_push(compute_q_push), .compute_full(compute_q_full),
      .store_push(store_q_push), .store_full(store_q_full),
      .bad_opcode(bad_opcode), .bad_memtype(bad_memtype)
  );

  wire [`VTA_INP_BANKS-1:0] inp_we, inp_re;
  wire [`VTA_INP_BANKS*`VTA_INP_BANK_AW-1:0] inp_waddr, inp_raddr;
  wire [`VTA_INP_BANKS*`VTA_INP_ELEM_BITS-1:0] inp_wdata, inp_rdata;
  wire wgt_we, wgt_re;
  wire [`VTA_LOG_WGT_DEPTH-1:0] wgt_waddr, wgt_raddr;
  wire [`VTA_WGT_ELEM_BITS-1:0] wgt_wdata, wgt_rdata;
  wire [`VTA_OUT_BANKS-1:0] out_we, out_re;
  wire [`VTA_OUT_BANKS*`VTA_OUT_BANK_AW-1:0] out_waddr, out_raddr;
  wire [`VTA_OUT_BANKS*`VTA_OUT_ELEM_BITS-1:0] out_wdata, out_rdata;

  vta_load load (
      .clk(clk), .rst(rst), .insn(load_insn), .insn_valid(!load_q_empty), .insn_pop(load_q_pop),
      .g2l_empty(g2l_empty), .g2l_pop(g2l_pop), .l2g_full(l2g_full), .l2g_push(l2g_push),
      .arvalid(m_load_arvalid), .arready(m_load_arready), .araddr(m_load_araddr),
      .arlen(m_load_arlen), .rvalid(m_load_rvalid), .rdata(m_load_rdata), .rlast(m_load_rlast),
      .rready(m_load_rready), .inp_we(inp_we), .inp_waddr(inp_waddr), .inp_wdata(inp_wdata),
      .wgt_we(wgt_we), .wgt_waddr(wgt_waddr), .wgt_wdata(wgt_wdata)
  );
  vta_compute compute (
      .clk(clk), .rst(rst), .insn(compute_insn), .insn_valid(!compute_q_empty),
      .insn_pop(compute_q_pop), .l2g_empty(l2g_empty), .l2g_pop(l2g_pop),
      .s2g_empty(s2g_empty), .s2g_pop(s2g_pop), .g2l_full(g2l_full), .g2l_push(g2l_push),
      .g2s_full(g2s_full), .g2s_push(g2s_push), .finish(finish), .bad_alu_op(bad_alu_op),
      .arvalid(m_compute_arvalid), .arready(m_compute_arready), .araddr(m_compute_araddr),
      .arlen(m_compute_arlen), .rvalid(m_compute_rvalid), .rdata(m_compute_rdata),
      .rlast(m_compute_rlast), .rready(m_compute_rready),
      .inp_re(inp_re), .inp_raddr(inp_raddr), .inp_rdata(inp_rdata),
      .wgt_re(wgt_re), .wgt_raddr(wgt_raddr), .wgt_rdata(wgt_rdata),
      .out_we(out_we), .out_waddr(out_waddr), .out_wdata(out_wdata)
  );
  vta_store store (
      .clk(clk), .rst(rst), .insn(store_insn), .insn_valid(!store_q_empty),
      .insn_pop(store_q_pop), .g2s_empty(g2s_empty), .g2s_pop(g2s_pop),
      .s2g_full(s2g_full), .s2g_push(s2g_push),
      .awvalid(m_store_awvalid), .awready(m_store_awready), .awaddr(m_store_awaddr),
      .awlen(m_store_awlen), .wvalid(m_store_wvalid), .wready(m_store_wready),
      .wdata(m_store_wdata), .wstrb(m_store_wstrb), .wlast(m_store_wlast),
      .bvalid(m_store_bvalid), .bready(m_store_bready),
      .out_re(out_re), .out_raddr(out_raddr), .out_rdata(out_rdata)
  );

  // ------------------------------------------------------------------ buffers
  genvar g;
  generate
    for (g = 0; g < `VTA_INP_BANKS; g = g + 1) begin : g_inp
      vta_sram #(.W(`VTA_INP_ELEM_BITS), .AW(`VTA_INP_BANK_AW)) bank (
          .clk(clk), .we(inp_we[g]), .waddr(inp_waddr[g*`VTA_INP_BANK_AW+:`VTA_INP_BANK_AW]),
          .wdata(inp_wdata[g*`VTA_INP_ELEM_BITS+:`VTA_INP_ELEM_BITS]), .re(inp_re[g]),
          .raddr(inp_raddr[g*`VTA_INP_BANK_AW+:`VTA_INP_BANK_AW]),
          .rdata(inp_rdata[g*`VTA_INP_ELEM_BITS+:`VTA_INP_ELEM_BITS])
      );
    end
    for (g = 0; g < `VTA_OUT_BANKS; g = g + 1) begin : g_out
      vta_sram #(.W(`VTA_OUT_ELEM_BITS), .AW(`VTA_OUT_BANK_AW)) bank (
          .clk(clk), .we(out_we[g]), .waddr(out_waddr[g*`VTA_OUT_BANK_AW+:`VTA_OUT_BANK_AW]),
          .wdata(out_wdata[g*`VTA_OUT_ELEM_BITS+:`VTA_OUT_ELEM_BITS]), .re(out_re[g]),
          .raddr(out_raddr[g*`VTA_OUT_BANK_AW+:`VTA_OUT_BANK_AW]),
          .rdata(out_rdata[g*`VTA_OUT_ELEM_BITS+:`VTA_OUT_ELEM_BITS])
      );
    end
  endgenerate
  vta_sram #(.W(`VTA_WGT_ELEM_BITS), .AW(`VTA_LOG_WGT_DEPTH)) wgt_mem (
      .clk(clk), .we(wgt_we), .waddr(wgt_waddr), .wdata(wgt_wdata),
      .re(wgt_re), .raddr(wgt_raddr), .rdata(wgt_rdata)
  );
endmodule

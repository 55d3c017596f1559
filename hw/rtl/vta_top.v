`include "vta_config.vh"
// VTA accelerator top: an AXI4-Lite control slave (the register map of vta/regmap.py) and one
// AXI4 master per client (fetch, load, compute read; store write), as a Zynq block design
// connects them (hw/fpga/); the fetch/load/compute/store modules, three command queues, four
// dependence-token queues, the INP/WGT/OUT buffers and the per-module cycle counters.
// Every master issues INCR bursts of full-bus beats with one ID, AxCACHE/AxPROT from the header.
module vta_top (
    input  wire clk,
    input  wire rst,  // synchronous, active high
    // AXI4-Lite control slave
    input  wire [`VTA_REG_ADDR_BITS-1:0] s_axi_control_awaddr,
    // (every access is served alike, whatever its protection)
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [`VTA_AXI_PROT_BITS-1:0] s_axi_control_awprot,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                          s_axi_control_awvalid,
    output wire                          s_axi_control_awready,
    input  wire [`VTA_REG_BITS-1:0]      s_axi_control_wdata,
    input  wire [`VTA_REG_BITS/8-1:0]    s_axi_control_wstrb,
    input  wire                          s_axi_control_wvalid,
    output wire                          s_axi_control_wready,
    output wire [`VTA_AXI_RESP_BITS-1:0] s_axi_control_bresp,
    output reg                           s_axi_control_bvalid,
    input  wire                          s_axi_control_bready,
    input  wire [`VTA_REG_ADDR_BITS-1:0] s_axi_control_araddr,
    // (likewise for reads)
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [`VTA_AXI_PROT_BITS-1:0] s_axi_control_arprot,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                          s_axi_control_arvalid,
    output wire                          s_axi_control_arready,
    output reg  [`VTA_REG_BITS-1:0]      s_axi_control_rdata,
    output wire [`VTA_AXI_RESP_BITS-1:0] s_axi_control_rresp,
    output reg                           s_axi_control_rvalid,
    input  wire                          s_axi_control_rready,
    // AXI4 read master: fetch
    output wire [`VTA_AXI_ID_BITS-1:0]    m_axi_fetch_arid,
    output wire [`VTA_AXI_ADDR_BITS-1:0]  m_axi_fetch_araddr,
    output wire [`VTA_AXI_LEN_BITS-1:0]   m_axi_fetch_arlen,
    output wire [`VTA_AXI_SIZE_BITS-1:0]  m_axi_fetch_arsize,
    output wire [`VTA_AXI_BURST_BITS-1:0] m_axi_fetch_arburst,
    output wire                           m_axi_fetch_arlock,
    output wire [`VTA_AXI_CACHE_BITS-1:0] m_axi_fetch_arcache,
    output wire [`VTA_AXI_PROT_BITS-1:0]  m_axi_fetch_arprot,
    output wire [`VTA_AXI_QOS_BITS-1:0]   m_axi_fetch_arqos,
    output wire                           m_axi_fetch_arvalid,
    input  wire                           m_axi_fetch_arready,
    // (one ID per master: the read ID needs no checking)
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [`VTA_AXI_ID_BITS-1:0]    m_axi_fetch_rid,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [`VTA_BUS_BITS-1:0]       m_axi_fetch_rdata,
    input  wire [`VTA_AXI_RESP_BITS-1:0]  m_axi_fetch_rresp,
    input  wire                           m_axi_fetch_rlast,
    input  wire                           m_axi_fetch_rvalid,
    output wire                           m_axi_fetch_rready,
    // AXI4 read master: load
    output wire [`VTA_AXI_ID_BITS-1:0]    m_axi_load_arid,
    output wire [`VTA_AXI_ADDR_BITS-1:0]  m_axi_load_araddr,
    output wire [`VTA_AXI_LEN_BITS-1:0]   m_axi_load_arlen,
    output wire [`VTA_AXI_SIZE_BITS-1:0]  m_axi_load_arsize,
    output wire [`VTA_AXI_BURST_BITS-1:0] m_axi_load_arburst,
    output wire                           m_axi_load_arlock,
    output wire [`VTA_AXI_CACHE_BITS-1:0] m_axi_load_arcache,
    output wire [`VTA_AXI_PROT_BITS-1:0]  m_axi_load_arprot,
    output wire [`VTA_AXI_QOS_BITS-1:0]   m_axi_load_arqos,
    output wire                           m_axi_load_arvalid,
    input  wire                           m_axi_load_arready,
    // (one ID per master: the read ID needs no checking)
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [`VTA_AXI_ID_BITS-1:0]    m_axi_load_rid,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [`VTA_BUS_BITS-1:0]       m_axi_load_rdata,
    input  wire [`VTA_AXI_RESP_BITS-1:0]  m_axi_load_rresp,
    input  wire                           m_axi_load_rlast,
    input  wire                           m_axi_load_rvalid,
    output wire                           m_axi_load_rready,
    // AXI4 read master: compute
    output wire [`VTA_AXI_ID_BITS-1:0]    m_axi_compute_arid,
    output wire [`VTA_AXI_ADDR_BITS-1:0]  m_axi_compute_araddr,
    output wire [`VTA_AXI_LEN_BITS-1:0]   m_axi_compute_arlen,
    output wire [`VTA_AXI_SIZE_BITS-1:0]  m_axi_compute_arsize,
    output wire [`VTA_AXI_BURST_BITS-1:0] m_axi_compute_arburst,
    output wire                           m_axi_compute_arlock,
    output wire [`VTA_AXI_CACHE_BITS-1:0] m_axi_compute_arcache,
    output wire [`VTA_AXI_PROT_BITS-1:0]  m_axi_compute_arprot,
    output wire [`VTA_AXI_QOS_BITS-1:0]   m_axi_compute_arqos,
    output wire                           m_axi_compute_arvalid,
    input  wire                           m_axi_compute_arready,
    // (one ID per master: the read ID needs no checking)
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [`VTA_AXI_ID_BITS-1:0]    m_axi_compute_rid,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [`VTA_BUS_BITS-1:0]       m_axi_compute_rdata,
    input  wire [`VTA_AXI_RESP_BITS-1:0]  m_axi_compute_rresp,
    input  wire                           m_axi_compute_rlast,
    input  wire                           m_axi_compute_rvalid,
    output wire                           m_axi_compute_rready,
    // AXI4 write master: store
    output wire [`VTA_AXI_ID_BITS-1:0]    m_axi_store_awid,
    output wire [`VTA_AXI_ADDR_BITS-1:0]  m_axi_store_awaddr,
    output wire [`VTA_AXI_LEN_BITS-1:0]   m_axi_store_awlen,
    output wire [`VTA_AXI_SIZE_BITS-1:0]  m_axi_store_awsize,
    output wire [`VTA_AXI_BURST_BITS-1:0] m_axi_store_awburst,
    output wire                           m_axi_store_awlock,
    output wire [`VTA_AXI_CACHE_BITS-1:0] m_axi_store_awcache,
    output wire [`VTA_AXI_PROT_BITS-1:0]  m_axi_store_awprot,
    output wire [`VTA_AXI_QOS_BITS-1:0]   m_axi_store_awqos,
    output wire                           m_axi_store_awvalid,
    input  wire                           m_axi_store_awready,
    output wire [`VTA_BUS_BITS-1:0]       m_axi_store_wdata,
    output wire [`VTA_BUS_BYTES-1:0]      m_axi_store_wstrb,
    output wire                           m_axi_store_wlast,
    output wire                           m_axi_store_wvalid,
    input  wire                           m_axi_store_wready,
    // (one ID per master: the response ID needs no checking)
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [`VTA_AXI_ID_BITS-1:0]    m_axi_store_bid,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [`VTA_AXI_RESP_BITS-1:0]  m_axi_store_bresp,
    input  wire                           m_axi_store_bvalid,
    output wire                           m_axi_store_bready,
    output wire                           irq   // CONTROL.DONE
);
  // ------------------------------------------------------------------ AXI request constants
  localparam [`VTA_AXI_ID_BITS-1:0] AXI_ID = 0;
  localparam integer LOG_BB = `VTA_LOG_BUS_BYTES;
  localparam [`VTA_AXI_SIZE_BITS-1:0] AXI_SIZE = LOG_BB[`VTA_AXI_SIZE_BITS-1:0];
  localparam [`VTA_AXI_BURST_BITS-1:0] AXI_INCR = `VTA_AXI_BURST_INCR;
  localparam [`VTA_AXI_CACHE_BITS-1:0] AXI_CACHE = `VTA_AXI_CACHE;
  localparam [`VTA_AXI_PROT_BITS-1:0] AXI_PROT = `VTA_AXI_PROT;
  localparam [`VTA_AXI_QOS_BITS-1:0] AXI_QOS = 0;
  assign m_axi_fetch_arid = AXI_ID;
  assign m_axi_fetch_arsize = AXI_SIZE;
  assign m_axi_fetch_arburst = AXI_INCR;
  assign m_axi_fetch_arlock = 1'b0;
  assign m_axi_fetch_arcache = AXI_CACHE;
  assign m_axi_fetch_arprot = AXI_PROT;
  assign m_axi_fetch_arqos = AXI_QOS;
  assign m_axi_load_arid = AXI_ID;
  assign m_axi_load_arsize = AXI_SIZE;
  assign m_axi_load_arburst = AXI_INCR;
  assign m_axi_load_arlock = 1'b0;
  assign m_axi_load_arcache = AXI_CACHE;
  assign m_axi_load_arprot = AXI_PROT;
  assign m_axi_load_arqos = AXI_QOS;
  assign m_axi_compute_arid = AXI_ID;
  assign m_axi_compute_arsize = AXI_SIZE;
  assign m_axi_compute_arburst = AXI_INCR;
  assign m_axi_compute_arlock = 1'b0;
  assign m_axi_compute_arcache = AXI_CACHE;
  assign m_axi_compute_arprot = AXI_PROT;
  assign m_axi_compute_arqos = AXI_QOS;
  assign m_axi_store_awid = AXI_ID;
  assign m_axi_store_awsize = AXI_SIZE;
  assign m_axi_store_awburst = AXI_INCR;
  assign m_axi_store_awlock = 1'b0;
  assign m_axi_store_awcache = AXI_CACHE;
  assign m_axi_store_awprot = AXI_PROT;
  assign m_axi_store_awqos = AXI_QOS;

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
  wire wr = s_axi_control_awvalid && s_axi_control_wvalid && !s_axi_control_bvalid;
  assign s_axi_control_awready = wr;
  assign s_axi_control_wready = wr;
  assign s_axi_control_bresp = OKAY;
  assign s_axi_control_rresp = OKAY;
  assign s_axi_control_arready = !s_axi_control_rvalid;
  // A write changes the bytes its strobe selects (one strobe bit per byte).
  localparam integer BYTE = 8;
  function automatic [RB-1:0] written(input [RB-1:0] old);
    integer b;
    begin
      for (b = 0; b < RB / BYTE; b = b + 1)
        written[b*BYTE+:BYTE] = s_axi_control_wstrb[b] ? s_axi_control_wdata[b*BYTE+:BYTE]
                                                        : old[b*BYTE+:BYTE];
    end
  endfunction
  // (CONTROL has one writable bit, START)
  /* verilator lint_off UNUSEDSIGNAL */
  wire [RB-1:0] control_write = written({RB{1'b0}});
  /* verilator lint_on UNUSEDSIGNAL */
  wire launch = wr && s_axi_control_awaddr == `VTA_REG_CONTROL &&
                control_write[`VTA_CONTROL_START_BIT];
  assign irq = done;
  wire axi_error = (m_axi_fetch_rvalid && m_axi_fetch_rready && m_axi_fetch_rresp != OKAY) ||
                   (m_axi_load_rvalid && m_axi_load_rready && m_axi_load_rresp != OKAY) ||
                   (m_axi_compute_rvalid && m_axi_compute_rready && m_axi_compute_rresp != OKAY) ||
                   (m_axi_store_bvalid && m_axi_store_bready && m_axi_store_bresp != OKAY);
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
      s_axi_control_bvalid <= 1'b0;
      s_axi_control_rvalid <= 1'b0;
      running <= 1'b0;
      done <= 1'b0;
      status <= 0;
      cycles <= 0;
      insn_count <= 0;
      insn_addr <= 0;
    end else begin
      if (wr) begin
        s_axi_control_bvalid <= 1'b1;
        if (s_axi_control_awaddr == `VTA_REG_INSN_COUNT) insn_count <= written(insn_count);
        if (s_axi_control_awaddr == `VTA_REG_INSN_ADDR) insn_addr <= written(insn_addr);
      end else if (s_axi_control_bready) s_axi_control_bvalid <= 1'b0;
      if (s_axi_control_arvalid && s_axi_control_arready) begin
        s_axi_control_rvalid <= 1'b1;
        case (s_axi_control_araddr)
          `VTA_REG_CONTROL: s_axi_control_rdata <= control;
          `VTA_REG_STATUS: s_axi_control_rdata <= {{(RB - `VTA_STATUS_BITS) {1'b0}}, status};
          `VTA_REG_INSN_COUNT: s_axi_control_rdata <= insn_count;
          `VTA_REG_INSN_ADDR: s_axi_control_rdata <= insn_addr;
          `VTA_REG_CYCLES_LO: s_axi_control_rdata <= cycles[RB-1:0];
          `VTA_REG_CYCLES_HI: s_axi_control_rdata <= cycles[CB-1:RB];
          `VTA_REG_HW_ID: s_axi_control_rdata <= `VTA_HW_ID_VALUE;
          default: s_axi_control_rdata <= counter_word;
        endcase
      end else if (s_axi_control_rready) s_axi_control_rvalid <= 1'b0;
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

  // ------------------------------------------------------------------ per-module counters
  // One 64-bit counter per (unit, kind of cycle), counting while running (vta/regmap.py).
  localparam integer NC = `VTA_COUNTERS;
  localparam integer NK = `VTA_COUNTER_KINDS;
  localparam integer LOG_CNT_BYTES = $clog2(CB / 8);
  localparam integer CNT_IDX_W = $clog2(NC);
  localparam [`VTA_REG_ADDR_BITS-1:0] CNT_BASE = `VTA_REG_COUNTERS_BASE;
  wire [NK-1:0] fetch_act, load_act, compute_act, store_act;
  wire [NC-1:0] counting;
  assign counting[`VTA_COUNTER_UNIT_FETCH*NK+:NK] = fetch_act;
  assign counting[`VTA_COUNTER_UNIT_LOAD*NK+:NK] = load_act;
  assign counting[`VTA_COUNTER_UNIT_COMPUTE*NK+:NK] = compute_act;
  assign counting[`VTA_COUNTER_UNIT_STORE*NK+:NK] = store_act;
  reg [CB-1:0] counters[0:NC-1];
  integer c;
  always @(posedge clk) begin
    for (c = 0; c < NC; c = c + 1) begin
      if (rst || launch) counters[c] <= 0;
      else if (running && counting[c]) counters[c] <= counters[c] + 1'b1;
    end
  end
  // The read port's view: the LO or HI word of the counter an address in the block selects.
  wire [`VTA_REG_ADDR_BITS-1:0] cnt_off = s_axi_control_araddr - CNT_BASE;
  wire [CNT_IDX_W-1:0] cnt_idx = cnt_off[LOG_CNT_BYTES+:CNT_IDX_W];
  localparam integer CNT_BLOCK = NC * (CB / 8);  // the block's size in bytes
  localparam [`VTA_REG_ADDR_BITS-1:0] CNT_END = CNT_BLOCK[`VTA_REG_ADDR_BITS-1:0];
  wire cnt_hit = s_axi_control_araddr >= CNT_BASE && cnt_off < CNT_END;
  wire [RB-1:0] counter_word = !cnt_hit ? {RB{1'b0}} :
      cnt_off[$clog2(RB / 8)] ? counters[cnt_idx][CB-1:RB] : counters[cnt_idx][RB-1:0];

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
      .arvalid(m_axi_fetch_arvalid), .arready(m_axi_fetch_arready), .araddr(m_axi_fetch_araddr),
      .arlen(m_axi_fetch_arlen), .rvalid(m_axi_fetch_rvalid), .rdata(m_axi_fetch_rdata),
      .rlast(m_axi_fetch_rlast), .rready(m_axi_fetch_rready), .insn(fetch_insn),
      .load_push(load_q_push), .load_full(load_q_full),
      .compute_push(compute_q_push), .compute_full(compute_q_full),
      .store_push(store_q_push), .store_full(store_q_full),
      .bad_opcode(bad_opcode), .bad_memtype(bad_memtype), .act(fetch_act)
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
      .act(load_act),
      .arvalid(m_axi_load_arvalid), .arready(m_axi_load_arready), .araddr(m_axi_load_araddr),
      .arlen(m_axi_load_arlen), .rvalid(m_axi_load_rvalid), .rdata(m_axi_load_rdata), .rlast(m_axi_load_rlast),
      .rready(m_axi_load_rready), .inp_we(inp_we), .inp_waddr(inp_waddr), .inp_wdata(inp_wdata),
      .wgt_we(wgt_we), .wgt_waddr(wgt_waddr), .wgt_wdata(wgt_wdata)
  );
  vta_compute compute (
      .clk(clk), .rst(rst), .insn(compute_insn), .insn_valid(!compute_q_empty),
      .insn_pop(compute_q_pop), .l2g_empty(l2g_empty), .l2g_pop(l2g_pop),
      .s2g_empty(s2g_empty), .s2g_pop(s2g_pop), .g2l_full(g2l_full), .g2l_push(g2l_push),
      .g2s_full(g2s_full), .g2s_push(g2s_push), .finish(finish), .bad_alu_op(bad_alu_op),
      .act(compute_act),
      .arvalid(m_axi_compute_arvalid), .arready(m_axi_compute_arready), .araddr(m_axi_compute_araddr),
      .arlen(m_axi_compute_arlen), .rvalid(m_axi_compute_rvalid), .rdata(m_axi_compute_rdata),
      .rlast(m_axi_compute_rlast), .rready(m_axi_compute_rready),
      .inp_re(inp_re), .inp_raddr(inp_raddr), .inp_rdata(inp_rdata),
      .wgt_re(wgt_re), .wgt_raddr(wgt_raddr), .wgt_rdata(wgt_rdata),
      .out_we(out_we), .out_waddr(out_waddr), .out_wdata(out_wdata)
  );
  vta_store store (
      .clk(clk), .rst(rst), .insn(store_insn), .insn_valid(!store_q_empty),
      .insn_pop(store_q_pop), .g2s_empty(g2s_empty), .g2s_pop(g2s_pop),
      .s2g_full(s2g_full), .s2g_push(s2g_push), .act(store_act),
      .awvalid(m_axi_store_awvalid), .awready(m_axi_store_awready), .awaddr(m_axi_store_awaddr),
      .awlen(m_axi_store_awlen), .wvalid(m_axi_store_wvalid), .wready(m_axi_store_wready),
      .wdata(m_axi_store_wdata), .wstrb(m_axi_store_wstrb), .wlast(m_axi_store_wlast),
      .bvalid(m_axi_store_bvalid), .bready(m_axi_store_bready),
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

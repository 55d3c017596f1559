`include "vta_config.vh"
// Fetch: reads insn_count instructions from DRAM (one AXI read stream) and dispatches at most
// one per cycle, in order, to the load (LOAD INP/WGT), compute (other LOADs, GEMM, ALU,
// FINISH) or store (STORE) command queue; stalls the read data while the target queue is full.
// An instruction no module executes raises an error bit and is dropped.
module vta_fetch (
    input  wire        clk,
    input  wire        rst,
    input  wire        start,
    input  wire [`VTA_AXI_ADDR_BITS-1:0] insn_addr,
    input  wire [`VTA_REG_BITS-1:0] insn_count,
    output wire        arvalid,
    input  wire        arready,
    output wire [`VTA_AXI_ADDR_BITS-1:0] araddr,
    output wire [`VTA_AXI_LEN_BITS-1:0]  arlen,
    input  wire        rvalid,
    input  wire [`VTA_BUS_BITS-1:0] rdata,
    input  wire        rlast,
    output wire        rready,
    output wire [`VTA_INSN_BITS-1:0] insn,
    output wire        load_push,
    input  wire        load_full,
    output wire        compute_push,
    input  wire        compute_full,
    output wire        store_push,
    input  wire        store_full,
    output wire        bad_opcode,
    output wire        bad_memtype,
    output reg  [`VTA_COUNTER_KINDS-1:0] act  // this cycle's kind (docs/timing.md), one-hot
);
  localparam integer IB = `VTA_INSN_BITS;
  localparam integer BUS = `VTA_BUS_BITS;
  localparam integer ADDR_W = `VTA_AXI_ADDR_BITS;
  localparam integer BEATS = IB / BUS;  // bus beats per instruction
  localparam integer SUB_W = BEATS > 1 ? $clog2(BEATS) : 1;
  localparam integer LAST = BEATS - 1;
  localparam [SUB_W-1:0] LAST_SUB = LAST[SUB_W-1:0];
  localparam integer ROWS_W = `VTA_MEM_Y_SIZE_W;
  localparam integer OP_W = `VTA_MEM_OPCODE_W;
  localparam integer MT_W = `VTA_MEM_MEMORY_TYPE_W;
  wire beat;
  reg held;  // the dispatch register holds an instruction
  wire rready_int;
  // The stream's bytes; instruction counts of 2**(ADDR_W - log2 instruction bytes) or more
  // would not fit the AXI address space, so the count's top bits are not read.
  /* verilator lint_off WIDTHTRUNC */
  wire [ADDR_W-1:0] nbytes = insn_count << `VTA_LOG_INSN_BYTES;
  /* verilator lint_on WIDTHTRUNC */
  vta_axi_reader reader (
      .clk(clk), .rst(rst), .start(start), .addr(insn_addr), .row_bytes(nbytes),
      .rows({{(ROWS_W - 1) {1'b0}}, 1'b1}), .stride_bytes({ADDR_W{1'b0}}),
      .arvalid(arvalid), .arready(arready), .araddr(araddr), .arlen(arlen),
      .rvalid(rvalid), .rlast(rlast), .rready(rready), .client_ready(rready_int), .beat(beat)
  );
  // Assemble instructions from beats (lowest bytes first); a complete instruction is held in
  // the dispatch register for one cycle (docs/timing.md: dispatched the cycle after its last
  // beat) and longer while its queue is full.
  reg [SUB_W-1:0] sub;
  reg [IB-1:0] r_insn;
  wire [IB-1:0] fresh;
  generate
    if (BEATS > 1) begin : g_multi
      reg [IB-BUS-1:0] part;  // earlier beats, oldest in the low bits
      assign fresh = {rdata, part};
      always @(posedge clk) if (beat) part <= fresh[IB-1:BUS];
    end else begin : g_one
      assign fresh = rdata;
    end
  endgenerate
  wire complete = beat && (BEATS == 1 || sub == LAST_SUB);
  assign insn = r_insn;

  wire [OP_W-1:0] opcode = insn[`VTA_MEM_OPCODE_LSB+:OP_W];
  wire [MT_W-1:0] mtype = insn[`VTA_MEM_MEMORY_TYPE_LSB+:MT_W];
  wire active = insn[`VTA_MEM_X_SIZE_LSB+:`VTA_MEM_X_SIZE_W] != 0;  // not a NOP
  // Routing from the generated header (vta/isa.py's one table, as bit masks over the opcode
  // and memory type).
  localparam [(1<<OP_W)-1:0] COMPUTE_OPS = `VTA_COMPUTE_OPCODES;
  localparam [(1<<MT_W)-1:0] LOAD_MODULE_TYPES = `VTA_LOAD_MODULE_MEMTYPES;
  localparam [(1<<MT_W)-1:0] LOADABLE_TYPES = `VTA_LOADABLE_MEMTYPES;
  localparam [(1<<MT_W)-1:0] STORABLE_TYPES = `VTA_STORABLE_MEMTYPES;
  localparam [OP_W-1:0] OP_LOAD = `VTA_OP_LOAD;
  localparam [OP_W-1:0] OP_STORE = `VTA_OP_STORE;
  wire is_load = opcode == OP_LOAD;
  wire is_store = opcode == OP_STORE;
  wire is_compute_op = COMPUTE_OPS[opcode];
  wire load_side = LOAD_MODULE_TYPES[mtype];
  wire loadable = LOADABLE_TYPES[mtype];
  wire storable = STORABLE_TYPES[mtype];
  wire bad_op = !(is_load || is_store || is_compute_op);
  wire bad_mem = active && ((is_load && !loadable) || (is_store && !storable));
  wire to_load = is_load && load_side;
  wire to_compute = (is_compute_op || (is_load && !load_side)) && !bad_mem;
  wire to_store = is_store && !bad_mem;
  wire blocked = (to_load && load_full) || (to_compute && compute_full) ||
                 (to_store && store_full);
  assign load_push = held && to_load && !load_full;
  assign compute_push = held && to_compute && !compute_full;
  assign store_push = held && to_store && !store_full;
  assign bad_opcode = held && bad_op;
  assign bad_memtype = held && bad_mem;
  wire take = !held || !blocked;  // the dispatch register is free for a new instruction
  assign rready_int = take;
  // Dispatches (to a queue, or dropped as bad) left in this run: fetch is counted until the last.
  reg [`VTA_REG_BITS-1:0] remaining;
  wire dispatch = held && !blocked;
  always @(*) begin
    act = 0;
    act[`VTA_COUNTER_BUSY] = dispatch;
    act[`VTA_COUNTER_STALL_QUEUE] = held && blocked;
    act[`VTA_COUNTER_STALL_DRAM] = !held && remaining != 0;
  end
  always @(posedge clk) begin
    if (rst) remaining <= 0;
    else if (start) remaining <= insn_count;
    else if (dispatch) remaining <= remaining - 1'b1;
  end

  always @(posedge clk) begin
    if (rst || start) begin
      sub <= 0;
      held <= 1'b0;
    end else begin
      if (beat) sub <= complete ? 0 : sub + 1'b1;
      if (complete) begin
        held <= 1'b1;
        r_insn <= fresh;
      end else if (!blocked) held <= 1'b0;
    end
  end
endmodule

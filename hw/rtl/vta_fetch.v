`include "vta_config.vh"
// Fetch: reads insn_count 16-byte instructions from DRAM (one AXI read stream) and dispatches
// at most one per cycle, in order, to the load (LOAD INP/WGT), compute (other LOADs, GEMM, ALU,
// FINISH) or store (STORE) command queue; stalls the read data while the target queue is full.
// An instruction no module executes raises an error bit and is dropped.
module vta_fetch (
    input  wire        clk,
    input  wire        rst,
    input  wire        start,
    input  wire [31:0] insn_addr,
    input  wire [31:0] insn_count,
    output wire        arvalid,
    input  wire        arready,
    output wire [31:0] araddr,
    output wire [7:0]  arlen,
    input  wire        rvalid,
    input  wire [`VTA_BUS_BITS-1:0] rdata,
    input  wire        rlast,
    output wire        rready,
    output wire [127:0] insn,
    output wire        load_push,
    input  wire        load_full,
    output wire        compute_push,
    input  wire        compute_full,
    output wire        store_push,
    input  wire        store_full,
    output wire        bad_opcode,
    output wire        bad_memtype
);
  localparam integer BEATS = 16 / `VTA_BUS_BYTES;
  wire beat;
  reg held;  // the dispatch register holds an instruction
  wire rready_int;
  wire [31:0] nbytes = {insn_count[27:0], 4'd0};
  vta_axi_reader #(
      .LOG_BB(`VTA_LOG_BUS_BYTES), .MAX_BEATS(`VTA_MAX_BURST_BEATS), .PAGE_BYTES(`VTA_PAGE_BYTES),
      .MAX_OUT(`VTA_MAX_OUTSTANDING), .OUT_W(`VTA_LOG_MAX_OUTSTANDING)
  ) reader (
      .clk(clk), .rst(rst), .start(start), .addr(insn_addr), .row_bytes(nbytes),
      .rows(16'd1), .stride_bytes(32'd0), .idle(),
      .arvalid(arvalid), .arready(arready), .araddr(araddr), .arlen(arlen),
      .rvalid(rvalid), .rlast(rlast), .rready(rready), .client_ready(rready_int), .beat(beat)
  );
  // Assemble instructions from beats (lowest bytes first); a complete instruction is held in
  // the dispatch register for one cycle (docs/timing.md: dispatched the cycle after its last
  // beat) and longer while its queue is full.
  reg [31:0] sub;
  reg [127:0] r_insn;
  wire [127:0] fresh;
  generate
    if (BEATS > 1) begin : g_multi
      reg [127-`VTA_BUS_BITS:0] part;
      wire [127:0] shifted = {rdata, part} >> `VTA_BUS_BITS;
      always @(posedge clk) if (beat) part <= shifted[127-`VTA_BUS_BITS:0];
      assign fresh = {rdata, part};
    end else begin : g_one
      assign fresh = rdata;
    end
  endgenerate
  wire complete = beat && sub == BEATS - 1;
  assign insn = r_insn;

  wire [2:0] opcode = insn[`VTA_MEM_OPCODE_LSB+:3];
  wire [2:0] mtype = insn[`VTA_MEM_MEMORY_TYPE_LSB+:3];
  wire active = insn[`VTA_MEM_X_SIZE_LSB+:16] != 0;  // not a NOP
  // Routing from the generated header (vta/isa.py's one table, as bit masks over the opcode
  // and memory type).
  localparam [7:0] COMPUTE_OPS = `VTA_COMPUTE_OPCODES;
  localparam [7:0] LOAD_MODULE_TYPES = `VTA_LOAD_MODULE_MEMTYPES;
  localparam [7:0] LOADABLE_TYPES = `VTA_LOADABLE_MEMTYPES;
  localparam [7:0] STORABLE_TYPES = `VTA_STORABLE_MEMTYPES;
  wire is_load = opcode == 3'd`VTA_OP_LOAD;
  wire is_store = opcode == 3'd`VTA_OP_STORE;
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

  always @(posedge clk) begin
    if (rst || start) begin
      sub <= 0;
      held <= 1'b0;
    end else begin
      if (beat) sub <= complete ? 0 : sub + 1;
      if (complete) begin
        held <= 1'b1;
        r_insn <= fresh;
      end else if (!blocked) held <= 1'b0;
    end
  end
endmodule

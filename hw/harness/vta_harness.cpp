// Verilator harness of the VTA top level: an AXI memory model over mapped host memory and an
// AXI4-Lite master, usable two ways from one build (hw/build.py):
//  - batch (main): loads a DRAM image at address 0, drives the registers as a driver does, runs
//    to CONTROL.DONE and writes the final image;
//    usage: vta_harness IN.bin OUT.bin INSN_ADDR INSN_COUNT MAX_CYCLES LATENCY INTERVAL STALL SEED
//    prints one JSON line: {"cycles", "status", "done", "clock_ticks", "counters": [...]}
//  - interactive (the C functions at the end, through ctypes: hw/harness.py): a host maps its
//    own buffers at physical addresses, reads and writes registers, and runs the clock.
//
// The memory model (docs/timing.md): one port per master, no contention between them. A read
// burst's first beat comes LATENCY cycles after its request, then at most one beat every
// INTERVAL cycles, in request order; a write beat is taken at most every INTERVAL cycles and
// the response comes LATENCY cycles after the last beat. With STALL > 0 every ready and every
// new valid of the model is withheld in a cycle with that probability (seeded): AXI
// back-pressure on all five channels. The model also checks the masters' side of the protocol
// (a valid request or write beat stays valid and unchanged until taken).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "Vvta_top.h"
#include "verilated.h"
#include "vta_regs.h"

namespace {

constexpr int kBusBytes = VTA_BUS_BYTES;
constexpr uint8_t kOkay = 0, kDecodeError = 3;
constexpr int kLiteTimeout = 1000;  // cycles an AXI4-Lite transaction may take

// Copy bus bytes between host memory and a verilated port of any width.
template <typename T>
void put_bytes(T& port, const uint8_t* src) {
  if constexpr (sizeof(T) <= 8) {
    uint64_t v = 0;
    std::memcpy(&v, src, kBusBytes);
    port = static_cast<T>(v);
  } else {
    std::memcpy(port.data(), src, kBusBytes);
  }
}
template <typename T>
void get_bytes(const T& port, uint8_t* dst) {
  if constexpr (sizeof(T) <= 8) {
    uint64_t v = port;
    std::memcpy(dst, &v, kBusBytes);
  } else {
    std::memcpy(dst, port.data(), kBusBytes);
  }
}

// The physical address space: host buffers mapped at addresses; the rest decodes to an error.
class Memory {
 public:
  bool map(uint64_t base, uint8_t* data, uint64_t size) {
    for (const Region& r : regions_)
      if (base < r.base + r.size && r.base < base + size) return false;
    regions_.push_back({base, size, data});
    return true;
  }
  bool unmap(uint64_t base) {
    for (size_t i = 0; i < regions_.size(); ++i) {
      if (regions_[i].base == base) {
        regions_.erase(regions_.begin() + static_cast<long>(i));
        return true;
      }
    }
    return false;
  }
  // Host pointer to the bus word at `addr`, or nullptr where nothing is mapped.
  uint8_t* word(uint64_t addr) const {
    for (const Region& r : regions_)
      if (addr >= r.base && addr + kBusBytes <= r.base + r.size) return r.data + (addr - r.base);
    return nullptr;
  }

 private:
  struct Region {
    uint64_t base, size;
    uint8_t* data;
  };
  std::vector<Region> regions_;
};

struct MemoryModel {
  uint64_t latency = 1;
  uint64_t interval = 1;
  double stall = 0.0;
};

struct Burst {
  uint64_t addr;
  uint32_t len;
  uint64_t ready;  // first cycle its data (reads) or its response (writes) may be presented
};

// The model's side of one read master.
struct ReadPort {
  const char* name;
  std::deque<Burst> q;
  uint32_t beat = 0;
  uint64_t next_beat = 0;  // the port's next free data cycle
  bool presenting = false;  // RVALID is high and must stay so until taken
  bool ar_pending = false;  // last cycle's ARVALID was not taken: it must hold
  uint64_t ar_addr = 0;
  uint32_t ar_len = 0;
};

// The model's side of the write master.
struct WritePort {
  std::deque<Burst> aw;
  std::deque<Burst> b;  // pending responses; `addr` carries the error flag
  uint32_t beat = 0;
  bool error = false;
  uint64_t next_beat = 0;
  bool presenting = false;
  bool aw_pending = false, w_pending = false;
  uint64_t aw_addr = 0;
  uint32_t aw_len = 0;
  std::vector<uint8_t> w_data = std::vector<uint8_t>(kBusBytes);
  uint32_t w_strb = 0;
  bool w_last = false;
};

class Harness {
 public:
  Harness(const MemoryModel& model, uint64_t seed)
      : context_(std::make_unique<VerilatedContext>()),
        top_(std::make_unique<Vvta_top>(context_.get())),
        model_(model),
        rng_(seed) {}
  ~Harness() { top_->final(); }

  Memory& memory() { return memory_; }
  uint64_t now() const { return now_; }
  bool irq() const { return top_->irq; }
  const std::string& error() const { return error_; }

  // One clock cycle: drive the model's outputs, settle, sample handshakes, rising edge.
  void tick() {
    if (!error_.empty()) return;
    drive_read(fetch_, top_->m_axi_fetch_arready, top_->m_axi_fetch_rvalid,
               top_->m_axi_fetch_rdata, top_->m_axi_fetch_rlast, top_->m_axi_fetch_rresp,
               top_->m_axi_fetch_rid);
    drive_read(load_, top_->m_axi_load_arready, top_->m_axi_load_rvalid,
               top_->m_axi_load_rdata, top_->m_axi_load_rlast, top_->m_axi_load_rresp,
               top_->m_axi_load_rid);
    drive_read(compute_, top_->m_axi_compute_arready, top_->m_axi_compute_rvalid,
               top_->m_axi_compute_rdata, top_->m_axi_compute_rlast,
               top_->m_axi_compute_rresp, top_->m_axi_compute_rid);
    drive_write();
    top_->clk = 0;
    top_->eval();

    sample_read(fetch_, top_->m_axi_fetch_arvalid, top_->m_axi_fetch_arready,
                top_->m_axi_fetch_araddr, top_->m_axi_fetch_arlen, top_->m_axi_fetch_rvalid,
                top_->m_axi_fetch_rready);
    sample_read(load_, top_->m_axi_load_arvalid, top_->m_axi_load_arready,
                top_->m_axi_load_araddr, top_->m_axi_load_arlen, top_->m_axi_load_rvalid,
                top_->m_axi_load_rready);
    sample_read(compute_, top_->m_axi_compute_arvalid, top_->m_axi_compute_arready,
                top_->m_axi_compute_araddr, top_->m_axi_compute_arlen,
                top_->m_axi_compute_rvalid, top_->m_axi_compute_rready);
    sample_write();
    lite_sample();

    top_->clk = 1;
    top_->eval();
    ++now_;
  }

  // Run up to `cycles` cycles, stopping early once CONTROL.DONE (the irq output) is high.
  uint64_t run(uint64_t cycles) {
    uint64_t ran = 0;
    while (ran < cycles && !top_->irq && error_.empty()) {
      tick();
      ++ran;
    }
    return ran;
  }

  void reset(int cycles) {
    top_->rst = 1;
    for (int i = 0; i < cycles; ++i) tick();
    top_->rst = 0;
  }

  // AXI4-Lite master transactions, as a driver issues them.
  void write_reg(uint32_t addr, uint32_t data) {
    top_->s_axi_control_awaddr = addr;
    top_->s_axi_control_wdata = data;
    top_->s_axi_control_wstrb = (1u << (VTA_REG_BITS / 8)) - 1;
    top_->s_axi_control_awvalid = 1;
    top_->s_axi_control_wvalid = 1;
    top_->s_axi_control_bready = 1;
    aw_done_ = false;
    for (int i = 0; !aw_done_ && i < kLiteTimeout; ++i) tick();
    if (!aw_done_) fail("register write to 0x" + hex(addr) + " was never accepted");
    top_->s_axi_control_awvalid = 0;
    top_->s_axi_control_wvalid = 0;
  }
  uint32_t read_reg(uint32_t addr) {
    top_->s_axi_control_araddr = addr;
    top_->s_axi_control_arvalid = 1;
    top_->s_axi_control_rready = 1;
    ar_done_ = r_done_ = false;
    for (int i = 0; !r_done_ && i < kLiteTimeout && error_.empty(); ++i) {
      tick();
      if (ar_done_) top_->s_axi_control_arvalid = 0;
    }
    if (!r_done_) fail("register read of 0x" + hex(addr) + " got no data");
    top_->s_axi_control_arvalid = 0;
    return r_data_;
  }

 private:
  static std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    return buf;
  }
  void fail(const std::string& what) {
    if (error_.empty()) error_ = "cycle " + std::to_string(now_) + ": " + what;
  }
  bool stalled() { return model_.stall > 0 && coin_(rng_) < model_.stall; }

  template <typename D, typename I>
  void drive_read(ReadPort& p, uint8_t& arready, uint8_t& rvalid, D& rdata, uint8_t& rlast,
                  uint8_t& rresp, I& rid) {
    arready = !stalled();
    rid = 0;
    if (!p.presenting)
      p.presenting = !p.q.empty() && p.q.front().ready <= now_ && p.next_beat <= now_ &&
                     !stalled();
    rvalid = p.presenting;
    if (p.presenting) {
      const uint64_t addr = p.q.front().addr + uint64_t(p.beat) * kBusBytes;
      uint8_t buf[kBusBytes] = {};
      const uint8_t* word = memory_.word(addr);
      if (word) std::memcpy(buf, word, kBusBytes);
      put_bytes(rdata, buf);
      rlast = p.beat + 1 == p.q.front().len;
      rresp = word ? kOkay : kDecodeError;
    } else {
      rlast = 0;
      rresp = kOkay;
    }
  }
  void sample_read(ReadPort& p, uint8_t arvalid, uint8_t arready, uint32_t araddr,
                   uint8_t arlen, uint8_t rvalid, uint8_t rready) {
    if (p.ar_pending && (!arvalid || araddr != p.ar_addr || arlen != p.ar_len))
      fail(std::string(p.name) + ": read request changed or withdrawn before it was taken");
    p.ar_pending = arvalid && !arready;
    p.ar_addr = araddr;
    p.ar_len = arlen;
    if (rvalid && rready) {
      p.presenting = false;
      p.next_beat = now_ + model_.interval;
      if (++p.beat == p.q.front().len) {
        p.q.pop_front();
        p.beat = 0;
      }
    }
    if (arvalid && arready) p.q.push_back({araddr, uint32_t(arlen) + 1, now_ + model_.latency});
  }

  void drive_write() {
    WritePort& w = store_;
    top_->m_axi_store_awready = !stalled();
    top_->m_axi_store_wready = w.next_beat <= now_ && !stalled();
    if (!w.presenting)
      w.presenting = !w.b.empty() && w.b.front().ready <= now_ && !stalled();
    top_->m_axi_store_bvalid = w.presenting;
    top_->m_axi_store_bresp = w.presenting && w.b.front().addr ? kDecodeError : kOkay;
    top_->m_axi_store_bid = 0;
  }
  void sample_write() {
    WritePort& w = store_;
    const bool awvalid = top_->m_axi_store_awvalid, wvalid = top_->m_axi_store_wvalid;
    uint8_t data[kBusBytes];
    get_bytes(top_->m_axi_store_wdata, data);
    const uint32_t strb = top_->m_axi_store_wstrb;
    const bool last = top_->m_axi_store_wlast;
    if (w.aw_pending && (!awvalid || top_->m_axi_store_awaddr != w.aw_addr ||
                         top_->m_axi_store_awlen != w.aw_len))
      fail("store: write request changed or withdrawn before it was taken");
    if (w.w_pending && (!wvalid || std::memcmp(data, w.w_data.data(), kBusBytes) != 0 ||
                        strb != w.w_strb || last != w.w_last))
      fail("store: write beat changed or withdrawn before it was taken");
    w.aw_pending = awvalid && !top_->m_axi_store_awready;
    w.aw_addr = top_->m_axi_store_awaddr;
    w.aw_len = top_->m_axi_store_awlen;
    w.w_pending = wvalid && !top_->m_axi_store_wready;
    std::memcpy(w.w_data.data(), data, kBusBytes);
    w.w_strb = strb;
    w.w_last = last;

    if (top_->m_axi_store_bvalid && top_->m_axi_store_bready) {
      w.b.pop_front();
      w.presenting = false;
    }
    if (awvalid && top_->m_axi_store_awready)
      w.aw.push_back({top_->m_axi_store_awaddr, uint32_t(top_->m_axi_store_awlen) + 1, 0});
    if (wvalid && top_->m_axi_store_wready) {
      if (w.aw.empty()) {
        fail("store: write beat without a write request");
        return;
      }
      Burst& req = w.aw.front();
      const uint64_t addr = req.addr + uint64_t(w.beat) * kBusBytes;
      uint8_t* word = memory_.word(addr);
      if (word)
        for (int i = 0; i < kBusBytes; ++i)
          if (strb >> i & 1) word[i] = data[i];
      w.error |= word == nullptr;
      w.next_beat = now_ + model_.interval;
      if (last != (w.beat + 1 == req.len)) fail("store: WLAST does not mark the burst's end");
      if (++w.beat == req.len) {
        w.b.push_back({w.error ? 1u : 0u, 0, now_ + model_.latency});
        w.aw.pop_front();
        w.beat = 0;
        w.error = false;
      }
    }
  }
  void lite_sample() {
    if (top_->s_axi_control_awvalid && top_->s_axi_control_awready) aw_done_ = true;
    if (top_->s_axi_control_arvalid && top_->s_axi_control_arready) ar_done_ = true;
    if (top_->s_axi_control_rvalid && top_->s_axi_control_rready) {
      r_done_ = true;
      r_data_ = top_->s_axi_control_rdata;
    }
  }

  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Vvta_top> top_;
  MemoryModel model_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> coin_{0.0, 1.0};
  Memory memory_;
  ReadPort fetch_{"fetch"}, load_{"load"}, compute_{"compute"};
  WritePort store_;
  uint64_t now_ = 0;
  bool aw_done_ = false, ar_done_ = false, r_done_ = false;
  uint32_t r_data_ = 0;
  std::string error_;
};

Harness* make_harness(uint64_t latency, uint64_t interval, double stall, uint64_t seed) {
  MemoryModel model;
  model.latency = latency < 1 ? 1 : latency;
  model.interval = interval < 1 ? 1 : interval;
  model.stall = stall < 0 ? 0 : stall > 0.95 ? 0.95 : stall;
  auto* h = new Harness(model, seed);
  h->reset(4);
  return h;
}

std::vector<uint8_t> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "harness: cannot read %s\n", path);
    std::exit(2);
  }
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

// ------------------------------------------------------------------ interactive interface
extern "C" {
void* vta_open(uint64_t latency, uint64_t interval, double stall, uint64_t seed) {
  return make_harness(latency, interval, stall, seed);
}
void vta_close(void* h) { delete static_cast<Harness*>(h); }
int vta_map(void* h, uint64_t base, void* data, uint64_t size) {
  return static_cast<Harness*>(h)->memory().map(base, static_cast<uint8_t*>(data), size);
}
int vta_unmap(void* h, uint64_t base) { return static_cast<Harness*>(h)->memory().unmap(base); }
void vta_write_reg(void* h, uint32_t addr, uint32_t data) {
  static_cast<Harness*>(h)->write_reg(addr, data);
}
uint32_t vta_read_reg(void* h, uint32_t addr) { return static_cast<Harness*>(h)->read_reg(addr); }
uint64_t vta_run(void* h, uint64_t cycles) { return static_cast<Harness*>(h)->run(cycles); }
uint64_t vta_now(void* h) { return static_cast<Harness*>(h)->now(); }
int vta_irq(void* h) { return static_cast<Harness*>(h)->irq(); }
const char* vta_error(void* h) { return static_cast<Harness*>(h)->error().c_str(); }
}

// ------------------------------------------------------------------ batch run
int main(int argc, char** argv) {
  if (argc != 10) {
    std::fprintf(stderr,
                 "usage: %s IN.bin OUT.bin INSN_ADDR INSN_COUNT MAX_CYCLES LATENCY INTERVAL "
                 "STALL SEED\n",
                 argv[0]);
    return 2;
  }
  const uint32_t insn_addr = std::strtoul(argv[3], nullptr, 0);
  const uint32_t insn_count = std::strtoul(argv[4], nullptr, 0);
  const uint64_t max_cycles = std::strtoull(argv[5], nullptr, 0);
  std::unique_ptr<Harness> h(make_harness(std::strtoull(argv[6], nullptr, 0),
                                          std::strtoull(argv[7], nullptr, 0),
                                          std::strtod(argv[8], nullptr),
                                          std::strtoull(argv[9], nullptr, 0)));
  std::vector<uint8_t> dram = read_file(argv[1]);
  h->memory().map(0, dram.data(), dram.size());

  const uint32_t id = h->read_reg(VTA_REG_HW_ID);
  if (id != VTA_HW_ID_VALUE) {
    std::fprintf(stderr, "harness: HW_ID reads 0x%08x, expected 0x%08x\n", id, VTA_HW_ID_VALUE);
    return 3;
  }
  h->write_reg(VTA_REG_INSN_ADDR, insn_addr);
  h->write_reg(VTA_REG_INSN_COUNT, insn_count);
  h->write_reg(VTA_REG_CONTROL, 1u << VTA_CONTROL_START_BIT);
  const uint64_t launched = h->now();
  uint32_t control = 0, status = 0;
  bool done = false;
  while (h->now() - launched < max_cycles && h->error().empty()) {
    h->run(64);  // poll interval, as a driver sleeps between reads
    control = h->read_reg(VTA_REG_CONTROL);
    status = h->read_reg(VTA_REG_STATUS);
    done = control >> VTA_CONTROL_DONE_BIT & 1;
    if (done || status) break;
  }
  const uint64_t cycles =
      uint64_t(h->read_reg(VTA_REG_CYCLES_HI)) << 32 | h->read_reg(VTA_REG_CYCLES_LO);
  std::string counters;
  for (int i = 0; i < 2 * VTA_COUNTERS; ++i) {
    const uint32_t word = h->read_reg(VTA_REG_COUNTERS_BASE + 4 * i);
    counters += (i ? ", " : "") + std::to_string(word);
  }
  if (!h->error().empty()) {
    std::fprintf(stderr, "harness: %s\n", h->error().c_str());
    return 3;
  }
  std::ofstream out(argv[2], std::ios::binary);
  out.write(reinterpret_cast<const char*>(dram.data()), static_cast<long>(dram.size()));
  std::printf(
      "{\"cycles\": %llu, \"status\": %u, \"done\": %d, \"clock_ticks\": %llu, "
      "\"registers\": [%s]}\n",
      static_cast<unsigned long long>(cycles), status, done ? 1 : 0,
      static_cast<unsigned long long>(h->now()), counters.c_str());
  return 0;
}

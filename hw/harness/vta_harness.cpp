// Batch harness for the verilated VTA: loads a DRAM image, serves it through an AXI memory
// model implementing docs/timing.md (read data L cycles after the request, one beat per cycle
// in request order; write response L cycles after the last beat), drives the AXI4-Lite
// registers as a driver does, runs to CONTROL.DONE and writes the final DRAM image.
//
// usage: vta_harness IN.bin OUT.bin INSN_ADDR INSN_COUNT MAX_CYCLES
// prints one JSON line: {"cycles": .., "status": .., "done": 0|1, "clock_ticks": ..}
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <vector>

#include "Vvta_top.h"
#include "verilated.h"
#include "vta_regs.h"

namespace {

constexpr int kBusBytes = VTA_BUS_BYTES;
constexpr uint64_t kLatency = VTA_DRAM_LATENCY;

// Copy bus bytes between the DRAM image and a verilated port of any width.
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

struct Burst {
  uint64_t addr;
  uint32_t len;
  uint64_t ready;  // cycle of the first data beat (reads) or of the response (writes)
};

class Dram {
 public:
  explicit Dram(std::vector<uint8_t> image) : mem_(std::move(image)) {}
  bool in_range(uint64_t addr) const { return addr + kBusBytes <= mem_.size(); }
  void read(uint64_t addr, uint8_t* out) const {
    if (in_range(addr)) std::memcpy(out, &mem_[addr], kBusBytes);
    else std::memset(out, 0, kBusBytes);
  }
  void write(uint64_t addr, const uint8_t* data, uint32_t strb) {
    if (!in_range(addr)) return;
    for (int i = 0; i < kBusBytes; ++i)
      if (strb >> i & 1) mem_[addr + i] = data[i];
  }
  const std::vector<uint8_t>& image() const { return mem_; }

 private:
  std::vector<uint8_t> mem_;
};

// One AXI read client: requests always accepted; data in request order, L cycles after each.
struct ReadPort {
  std::deque<Burst> q;
  uint32_t beat = 0;
  bool valid(uint64_t now) const { return !q.empty() && q.front().ready <= now; }
  uint64_t addr() const { return q.front().addr + uint64_t(beat) * kBusBytes; }
  bool last() const { return beat + 1 == q.front().len; }
  void advance() {
    if (last()) {
      q.pop_front();
      beat = 0;
    } else {
      ++beat;
    }
  }
};

// The write client: requests and data always accepted; response L cycles after the last beat.
struct WritePort {
  std::deque<Burst> aw;
  std::deque<Burst> b;  // pending responses (ready = response cycle)
  uint32_t beat = 0;
  bool error = false;
};

class Harness {
 public:
  Harness(Vvta_top* top, Dram* dram) : top_(top), dram_(dram) {}

  // One clock cycle: drive slave-side AXI inputs, settle, sample handshakes, rising edge.
  void tick() {
    uint8_t buf[64];
    drive_read(fetch_, top_->m_fetch_rvalid, top_->m_fetch_rdata, top_->m_fetch_rlast,
               top_->m_fetch_rresp, buf);
    drive_read(load_, top_->m_load_rvalid, top_->m_load_rdata, top_->m_load_rlast,
               top_->m_load_rresp, buf);
    drive_read(compute_, top_->m_compute_rvalid, top_->m_compute_rdata,
               top_->m_compute_rlast, top_->m_compute_rresp, buf);
    top_->m_fetch_arready = 1;
    top_->m_load_arready = 1;
    top_->m_compute_arready = 1;
    top_->m_store_awready = 1;
    top_->m_store_wready = 1;
    top_->m_store_bvalid = !store_.b.empty() && store_.b.front().ready <= now_;
    top_->m_store_bresp = store_.b.empty() ? 0 : (store_.b.front().addr ? 2 : 0);
    top_->clk = 0;
    top_->eval();

    sample_read(fetch_, top_->m_fetch_arvalid, top_->m_fetch_araddr, top_->m_fetch_arlen,
                top_->m_fetch_rvalid, top_->m_fetch_rready);
    sample_read(load_, top_->m_load_arvalid, top_->m_load_araddr, top_->m_load_arlen,
                top_->m_load_rvalid, top_->m_load_rready);
    sample_read(compute_, top_->m_compute_arvalid, top_->m_compute_araddr,
                top_->m_compute_arlen, top_->m_compute_rvalid, top_->m_compute_rready);
    sample_write(buf);
    lite_sample();

    top_->clk = 1;
    top_->eval();
    ++now_;
  }

  void reset(int cycles) {
    top_->rst = 1;
    for (int i = 0; i < cycles; ++i) tick();
    top_->rst = 0;
  }

  // AXI4-Lite master transactions, as a driver issues them.
  void write_reg(uint32_t addr, uint32_t data) {
    top_->s_axil_awaddr = addr;
    top_->s_axil_wdata = data;
    top_->s_axil_awvalid = 1;
    top_->s_axil_wvalid = 1;
    top_->s_axil_bready = 1;
    aw_done_ = false;
    while (!aw_done_) tick();
    top_->s_axil_awvalid = 0;
    top_->s_axil_wvalid = 0;
  }
  uint32_t read_reg(uint32_t addr) {
    top_->s_axil_araddr = addr;
    top_->s_axil_arvalid = 1;
    top_->s_axil_rready = 1;
    ar_done_ = r_done_ = false;
    while (!r_done_) {
      tick();
      if (ar_done_) top_->s_axil_arvalid = 0;
    }
    top_->s_axil_arvalid = 0;
    return r_data_;
  }

  uint64_t now() const { return now_; }

 private:
  template <typename D>
  void drive_read(ReadPort& p, uint8_t& rvalid, D& rdata, uint8_t& rlast, uint8_t& rresp,
                  uint8_t* buf) {
    rvalid = p.valid(now_);
    if (rvalid) {
      dram_->read(p.addr(), buf);
      put_bytes(rdata, buf);
      rlast = p.last();
      rresp = dram_->in_range(p.addr()) ? 0 : 2;
    } else {
      rlast = 0;
      rresp = 0;
    }
  }
  void sample_read(ReadPort& p, uint8_t arvalid, uint32_t araddr, uint8_t arlen, uint8_t rvalid,
                   uint8_t rready) {
    if (rvalid && rready) p.advance();
    if (arvalid) p.q.push_back({araddr, uint32_t(arlen) + 1, now_ + kLatency});
  }
  void sample_write(uint8_t* buf) {
    if (top_->m_store_bvalid && top_->m_store_bready) store_.b.pop_front();
    if (top_->m_store_awvalid)
      store_.aw.push_back({top_->m_store_awaddr, uint32_t(top_->m_store_awlen) + 1, 0});
    if (top_->m_store_wvalid) {
      if (store_.aw.empty()) {
        std::fprintf(stderr, "harness: W beat without a write request at cycle %llu\n",
                     static_cast<unsigned long long>(now_));
        std::exit(3);
      }
      Burst& req = store_.aw.front();
      uint64_t addr = req.addr + uint64_t(store_.beat) * kBusBytes;
      get_bytes(top_->m_store_wdata, buf);
      dram_->write(addr, buf, top_->m_store_wstrb);
      bool oor = !dram_->in_range(addr);
      if (++store_.beat == req.len) {
        // the response's `addr` field carries its error flag
        store_.b.push_back({oor || store_.error ? 1u : 0u, 0, now_ + kLatency});
        store_.aw.pop_front();
        store_.beat = 0;
        store_.error = false;
      } else {
        store_.error |= oor;
      }
    }
  }
  void lite_sample() {
    if (top_->s_axil_awvalid && top_->s_axil_awready) aw_done_ = true;
    if (top_->s_axil_arvalid && top_->s_axil_arready) ar_done_ = true;
    if (top_->s_axil_rvalid && top_->s_axil_rready) {
      r_done_ = true;
      r_data_ = top_->s_axil_rdata;
    }
  }

  Vvta_top* top_;
  Dram* dram_;
  ReadPort fetch_, load_, compute_;
  WritePort store_;
  uint64_t now_ = 0;
  bool aw_done_ = false, ar_done_ = false, r_done_ = false;
  uint32_t r_data_ = 0;
};

std::vector<uint8_t> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "harness: cannot read %s\n", path);
    std::exit(2);
  }
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s IN.bin OUT.bin INSN_ADDR INSN_COUNT MAX_CYCLES\n", argv[0]);
    return 2;
  }
  const uint32_t insn_addr = std::strtoul(argv[3], nullptr, 0);
  const uint32_t insn_count = std::strtoul(argv[4], nullptr, 0);
  const uint64_t max_cycles = std::strtoull(argv[5], nullptr, 0);
  auto context = std::make_unique<VerilatedContext>();
  auto top = std::make_unique<Vvta_top>(context.get());
  Dram dram(read_file(argv[1]));
  Harness h(top.get(), &dram);

  h.reset(4);
  const uint32_t id = h.read_reg(VTA_REG_HW_ID);
  if (id != VTA_HW_ID_VALUE) {
    std::fprintf(stderr, "harness: HW_ID reads 0x%08x, expected 0x%08x\n", id, VTA_HW_ID_VALUE);
    return 3;
  }
  h.write_reg(VTA_REG_INSN_ADDR, insn_addr);
  h.write_reg(VTA_REG_INSN_COUNT, insn_count);
  h.write_reg(VTA_REG_CONTROL, 1u << VTA_CONTROL_START_BIT);
  const uint64_t launched = h.now();
  uint32_t control = 0, status = 0;
  bool done = false;
  while (h.now() - launched < max_cycles) {
    for (int i = 0; i < 64; ++i) h.tick();  // poll interval, as a driver sleeps between reads
    control = h.read_reg(VTA_REG_CONTROL);
    status = h.read_reg(VTA_REG_STATUS);
    done = control >> VTA_CONTROL_DONE_BIT & 1;
    if (done || status) break;
  }
  const uint64_t cycles =
      uint64_t(h.read_reg(VTA_REG_CYCLES_HI)) << 32 | h.read_reg(VTA_REG_CYCLES_LO);

  std::ofstream out(argv[2], std::ios::binary);
  out.write(reinterpret_cast<const char*>(dram.image().data()), dram.image().size());
  std::printf("{\"cycles\": %llu, \"status\": %u, \"done\": %d, \"clock_ticks\": %llu}\n",
              static_cast<unsigned long long>(cycles), status, done ? 1 : 0,
              static_cast<unsigned long long>(h.now()));
  top->final();
  return 0;
}

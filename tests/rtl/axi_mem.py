"""A cocotb AXI4 memory model with the docs/timing.md timing: read data `latency` cycles after
the request, one beat per cycle in request order; write response `latency` cycles after the
last beat. Requests and data are always accepted (the masters limit what is outstanding)."""

from collections import deque

from cocotb.triggers import ReadOnly, RisingEdge


def port(dut, prefix: str, name: str):
    """Signal `prefix_name` of `dut` (or plain `name` for an empty prefix)."""
    return getattr(dut, f"{prefix}_{name}" if prefix else name)


class AxiMemory:
    """Serves read ports (prefix with ar*/r*) and write ports (aw*/w*/b*) of `dut` from `mem`."""

    def __init__(self, dut, mem: bytearray, bus_bytes: int, latency: int):
        self.dut, self.mem, self.bb, self.latency = dut, mem, bus_bytes, latency

    def _read(self, addr: int) -> int:
        return int.from_bytes(self.mem[addr : addr + self.bb].ljust(self.bb, b"\0"), "little")

    async def serve_read(self, prefix: str):
        d = self.dut
        sig = {n: port(d, prefix, n) for n in ("arvalid", "araddr", "arlen")}
        rvalid, rdata, rlast = (port(d, prefix, n) for n in ("rvalid", "rdata", "rlast"))
        rready = port(d, prefix, "rready")
        port(d, prefix, "arready").value = 1
        bursts: deque = deque()
        beat = now = 0
        while True:
            await RisingEdge(self.dut.clk)
            now += 1
            valid = bool(bursts) and bursts[0][2] <= now
            rvalid.value = int(valid)
            if valid:
                addr, length, _ = bursts[0]
                rdata.value = self._read(addr + beat * self.bb)
                rlast.value = int(beat == length - 1)
            else:
                rlast.value = 0
            await ReadOnly()
            if valid and rready.value:
                beat += 1
                if beat == bursts[0][1]:
                    bursts.popleft()
                    beat = 0
            if sig["arvalid"].value:
                length = int(sig["arlen"].value) + 1
                bursts.append((int(sig["araddr"].value), length, now + self.latency))

    async def serve_write(self, prefix: str):
        d = self.dut
        port(d, prefix, "awready").value = 1
        port(d, prefix, "wready").value = 1
        bvalid = port(d, prefix, "bvalid")
        requests: deque = deque()
        responses: deque = deque()
        beat = now = 0
        while True:
            await RisingEdge(d.clk)
            now += 1
            respond = bool(responses) and responses[0] <= now
            bvalid.value = int(respond)
            await ReadOnly()
            if respond and port(d, prefix, "bready").value:
                responses.popleft()
            if port(d, prefix, "awvalid").value:
                requests.append(
                    (int(port(d, prefix, "awaddr").value), int(port(d, prefix, "awlen").value) + 1)
                )
            if port(d, prefix, "wvalid").value:
                assert requests, f"cycle {now}: W beat before its write request"
                addr, length = requests[0]
                addr += beat * self.bb
                data = int(port(d, prefix, "wdata").value).to_bytes(self.bb, "little")
                strb = int(port(d, prefix, "wstrb").value)
                for i in range(self.bb):
                    if strb >> i & 1 and addr + i < len(self.mem):
                        self.mem[addr + i] = data[i]
                beat += 1
                if beat == length:
                    assert port(d, prefix, "wlast").value, f"cycle {now}: WLAST missing"
                    requests.popleft()
                    responses.append(now + self.latency)
                    beat = 0

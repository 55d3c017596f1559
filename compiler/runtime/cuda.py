"""Running GPU modules on a CUDA device through cuda-python's driver API: the PTX is loaded
with cuModuleLoadData (the driver JIT-compiles it for the device), buffers are allocated and
copied, the kernels are launched in order with their grids, and timing uses CUDA events.

Where no driver or device exists, `cuda_status()` says why in one line, and every entry point
raises DeviceError with that line.
"""

from __future__ import annotations

import ctypes
from functools import cache
from typing import Any

import numpy as np

from vta.errors import DeviceError


def _driver() -> Any:
    try:
        from cuda.bindings import driver  # the gpu extra: imported on first use
    except ImportError:
        raise DeviceError("cuda-python is not installed: pip install 'vta-codesign[gpu]'") from None
    return driver


def _check(result: Any, what: str) -> Any:
    """Unpack a cuda-python (error, value...) result, raising DeviceError on an error."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise DeviceError(f"CUDA {what} failed: {err}")
    return rest[0] if len(rest) == 1 else tuple(rest)


@cache
def cuda_status() -> str | None:
    """None when a CUDA device is usable here, else the reason in one line."""
    try:
        drv = _driver()
        _check(drv.cuInit(0), "cuInit")
        if _check(drv.cuDeviceGetCount(), "cuDeviceGetCount") < 1:
            return "no CUDA device is attached"
    except Exception as err:  # noqa: BLE001 - any failure means no usable GPU
        return f"no usable CUDA GPU ({type(err).__name__}: {str(err).splitlines()[0][:160]})"
    return None


def gpu_available() -> bool:
    return cuda_status() is None


class CUDADevice:
    """Device 0's primary context; loads modules, moves arrays, launches and times kernels."""

    def __init__(self) -> None:
        reason = cuda_status()
        if reason is not None:
            raise DeviceError(reason)
        self.drv = drv = _driver()
        self.device = _check(drv.cuDeviceGet(0), "cuDeviceGet")
        self.context = _check(drv.cuDevicePrimaryCtxRetain(self.device), "cuCtxRetain")
        _check(drv.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    @property
    def arch(self) -> str:
        attr = self.drv.CUdevice_attribute
        major = _check(
            self.drv.cuDeviceGetAttribute(
                attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.device
            ),
            "cuDeviceGetAttribute",
        )
        minor = _check(
            self.drv.cuDeviceGetAttribute(
                attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.device
            ),
            "cuDeviceGetAttribute",
        )
        return f"sm_{major}{minor}"

    def load(self, ptx: str, names: list[str]) -> dict[str, Any]:
        image = np.frombuffer(ptx.encode() + b"\0", dtype=np.uint8)
        module = _check(self.drv.cuModuleLoadData(image.ctypes.data), "cuModuleLoadData")
        return {n: _check(self.drv.cuModuleGetFunction(module, n.encode()), n) for n in names}

    def alloc(self, nbytes: int) -> Any:
        return _check(self.drv.cuMemAlloc(max(nbytes, 1)), "cuMemAlloc")

    def free(self, ptr: Any) -> None:
        _check(self.drv.cuMemFree(ptr), "cuMemFree")

    def to_device(self, ptr: Any, a: np.ndarray) -> None:
        _check(self.drv.cuMemcpyHtoD(ptr, a.ctypes.data, a.nbytes), "cuMemcpyHtoD")

    def to_host(self, a: np.ndarray, ptr: Any) -> None:
        _check(self.drv.cuMemcpyDtoH(a.ctypes.data, ptr, a.nbytes), "cuMemcpyDtoH")

    def launch(self, fn: Any, grid: tuple, block: tuple, ptrs: list[Any]) -> None:
        values = [ctypes.c_void_p(int(p)) for p in ptrs]
        params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
        _check(
            self.drv.cuLaunchKernel(fn, *grid, *block, 0, 0, ctypes.addressof(params), 0),
            "cuLaunchKernel",
        )

    def synchronize(self) -> None:
        _check(self.drv.cuCtxSynchronize(), "cuCtxSynchronize")

    def event(self) -> Any:
        return _check(self.drv.cuEventCreate(0), "cuEventCreate")

    def elapsed_s(self, start: Any, end: Any) -> float:
        _check(self.drv.cuEventSynchronize(end), "cuEventSynchronize")
        return _check(self.drv.cuEventElapsedTime(start, end), "cuEventElapsedTime") / 1e3


class _Loaded:
    """A module's kernels on the device with device copies of its buffers. `module` is a
    GPUModule or a tuner's GPUArtifact: ptx, kernel_names, launches, device_buffer_bytes."""

    def __init__(self, dev: CUDADevice, module: Any, arrays: list[np.ndarray]):
        self.dev, self.module = dev, module
        self.fns = dev.load(module.ptx, module.kernel_names)
        sizes = [a.nbytes for a in arrays] + list(module.device_buffer_bytes)
        self.ptrs = [dev.alloc(n) for n in sizes]
        for ptr, a in zip(self.ptrs, arrays, strict=False):
            dev.to_device(ptr, np.ascontiguousarray(a))

    def run(self) -> None:
        for launch in self.module.launches:
            args = [self.ptrs[i] for i in launch.args]
            self.dev.launch(self.fns[launch.kernel], launch.grid, launch.block, args)

    def close(self) -> None:
        for p in self.ptrs:
            self.dev.free(p)


def run_module(module: Any, arrays: list[np.ndarray]) -> None:
    """Run a GPUModule once on the device; every parameter array gets the device's result."""
    dev = CUDADevice()
    loaded = _Loaded(dev, module, arrays)
    try:
        loaded.run()
        dev.synchronize()
        for ptr, a in zip(loaded.ptrs, arrays, strict=False):
            dev.to_host(a, ptr)
    finally:
        loaded.close()


def time_module(
    module: Any, arrays: list[np.ndarray], number: int = 10, repeat: int = 5
) -> tuple[list[float], list[np.ndarray]]:
    """(seconds per run for each of `repeat` event-timed batches of `number` runs, the output
    arrays of the first run)."""
    dev = CUDADevice()
    loaded = _Loaded(dev, module, arrays)
    try:
        loaded.run()
        dev.synchronize()
        results = [np.empty_like(a) for a in arrays]
        for ptr, a in zip(loaded.ptrs, results, strict=False):
            dev.to_host(a, ptr)
        costs = []
        for _ in range(repeat):
            start, end = dev.event(), dev.event()
            _check(dev.drv.cuEventRecord(start, 0), "cuEventRecord")
            for _ in range(number):
                loaded.run()
            _check(dev.drv.cuEventRecord(end, 0), "cuEventRecord")
            costs.append(dev.elapsed_s(start, end) / number)
        return costs, results
    finally:
        loaded.close()

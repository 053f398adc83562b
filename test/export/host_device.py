"""A GPU made of the host, for an exported entry's own Python: what the entry calls of torch.cuda and
of cuda-python's driver and NVRTC, answered on the CPU, so that the entry's driver code — its NVRTC
options, buffer sizes, shared-memory requests, the ctypes Args it fills and mutates between launches,
the launch grid of every step, the graph it captures and replays — runs end to end without a device,
and its predictions can be held against the CPU trainer's (test_export.py).

- The entry's "device" tensors are host tensors: torch itself, on the CPU, but for the parts of
  torch.cuda the entry calls (`HostCuda`) and its allocations: `torch.empty` gives garbage (0xFF
  bytes: NaN floats), `torch.from_numpy(a).to(dev)` a copy, and both, with the inputs
  (`as_device_tensor`: host tensors that say they are CUDA tensors), are the device's memory
  (their storages, held weakly).
- NVRTC compiles the entry's CUDA text, with the defines it passes, as host code: host_device.cpp
  built into a shared library (`HostNvrtc`); the options a real compile needs are checked.
- A launch runs that library's kernels over its grid (`HostDriver.cuLaunchKernel`), with the checks
  a device makes: its stream the capture's while capturing, a grid of at least one block and a
  block of 1..1,024 threads, dynamic shared memory within the function's attribute (48 KB unset), the attribute within the device's opt-in limit, every
  non-null pointer of the Args starting in live device memory; and those of the kernel's arithmetic
  (host_device.cpp). In order the text's own kernels run, one thread a block; reversed, the step
  functions they call, every grid and phase last to first. The Args are copied at the launch, as
  cuLaunchKernel copies its parameters.
- The device's memory is device 0's, the inputs' GPU; a test may make another device current (as a
  caller on a machine of several may have), and then a module loads into that device's context, a
  capture captures that device's stream, and a launch there with device 0's pointers fails.
- A torch kernel (the entry's copy_ and zero_, each dtype pair its own) must have run once outside
  a capture before one captures it: torch's modules load lazily, at a kernel's first launch, and a
  driver before CUDA 12.3's refuses that load inside a capture.
- Inside `torch.cuda.graph(g)` a launch, and the tensor copies and fills the entry makes there, are
  recorded, not run, as a capture records them (the tensors held weakly, as a graph holds no
  tensor: one the entry lets go of fails the replay; what torch.empty gives during the capture is
  kept, as the graph's pool keeps it); a synchronize, a read of device memory back to the host or a
  copy between host and device memory there fails, as it does in a capture; host-only work runs.
  `g.replay()` runs the work in order, as often as called.

Debian's python3 with numpy and torch (CPU); a C++ compiler for the library.
"""
import contextlib
import ctypes
import enum
import os
import re
import subprocess
import types
import weakref

import torch
from torch.multiprocessing.reductions import StorageWeakRef

DEFAULT_SMEM = 48 * 1024  # dynamic shared memory a launch may use without the function's attribute
CAPTURE_STREAM = 0xCA97   # the stream torch.cuda.graph captures on (current inside it)
DEFAULT_STREAM = 0        # the current stream elsewhere (torch's default stream is 0)
INPUT_DEVICE = 0          # the device whose memory the inputs and every allocation are

_device_memory = []  # (weak reference to the storage, first address, bytes) of the device's memory


def on_device(tensor):
    """Makes a host tensor's storage part of the device's memory; returns the tensor. The storage, not
    the tensor object: a view or a detached tensor keeps the memory alive when the first one dies."""
    storage = tensor.storage().untyped()
    _device_memory.append((StorageWeakRef(storage), storage.data_ptr(), storage.nbytes()))
    return tensor


def in_device_memory(address):
    _device_memory[:] = [m for m in _device_memory if not m[0].expired()]
    return any(start <= address < start + size for _, start, size in _device_memory)


class DeviceTensor(torch.Tensor):
    """A host tensor that says it is a CUDA tensor (the entry refuses any other input)."""

    @property
    def is_cuda(self):
        return True


def as_device_tensor(t):
    return on_device(t.contiguous().as_subclass(DeviceTensor))


class HostArray(torch.Tensor):
    """torch.from_numpy's tensor, in host memory; .to(a device) copies it into the device's."""

    def to(self, *args, **kwargs):
        plain = self.as_subclass(torch.Tensor)
        if kwargs.get("device") is None and not any(isinstance(a, (torch.device, str)) for a in args):
            return plain.to(*args, **kwargs)  # a dtype only: still host memory
        return on_device(plain.to(*args, **dict(kwargs, copy=True)))


class HostGraph:
    """torch.cuda.CUDAGraph: what was captured, run in order at each replay."""

    def __init__(self):
        self.work = []
        self.pool = []  # tensors made during the capture: the graph's private pool keeps their memory

    def replay(self):
        for run in self.work:
            run()


class HostCuda(types.SimpleNamespace):
    """The torch.cuda the entry sees: a device of compute capability `capability` with `optin` bytes
    of shared memory a block may opt in to."""

    def __init__(self, capability, optin):
        # current: the current device; warm: the torch kernels (name and dtypes) run outside a capture
        super().__init__(capturing=None, capability=capability, optin=optin, current=INPUT_DEVICE, warm=set())
        self.CUDAGraph = HostGraph

    @contextlib.contextmanager
    def device(self, dev):
        """torch.cuda.device(the inputs' device): that device current inside. The inputs here are
        host tensors, so their device reads cpu; any other (torch.cuda.device(0), say) is refused."""
        if torch.device(dev) != torch.device("cpu"):
            raise RuntimeError(f"host device: torch.cuda.device({dev!r}) is not the inputs' device")
        saved, self.current = self.current, INPUT_DEVICE
        try:
            yield
        finally:
            self.current = saved

    def check_current(self, what):
        if self.current != INPUT_DEVICE:
            raise RuntimeError(f"host device: {what} with device {self.current} current, the memory device {INPUT_DEVICE}'s")

    def get_device_capability(self, dev=None):
        return self.capability

    def get_device_properties(self, dev=None):
        return types.SimpleNamespace(shared_memory_per_block_optin=self.optin)

    def synchronize(self, dev=None):
        if self.capturing is not None:
            raise RuntimeError("host device: synchronize during a capture")

    def current_stream(self, dev=None):
        return types.SimpleNamespace(cuda_stream=CAPTURE_STREAM if self.capturing is not None else DEFAULT_STREAM)

    @contextlib.contextmanager
    def graph(self, g):
        """Capture into g: launches (HostDriver) and the entry's copy_ and zero_ are recorded, not run."""
        if self.capturing is not None:
            raise RuntimeError("host device: a capture inside a capture")
        self.check_current("a capture")  # it would capture that device's stream; device 0's work runs now
        saved = {name: getattr(torch.Tensor, name) for name in ("copy_", "zero_", "numpy", "item", "cpu", "tolist")}

        def recorded(name):
            def method(tensor, *args, **kwargs):
                tensors = [t for t in (tensor, *args) if isinstance(t, torch.Tensor)]
                on = [in_device_memory(t.data_ptr()) for t in tensors]
                if not any(on):  # host work: not captured, it runs now
                    return saved[name](tensor, *args, **kwargs)
                if not all(on):  # a copy between host and device memory: no kernel a graph can hold
                    raise RuntimeError(f"host device: Tensor.{name} between host and device memory during a capture")
                kind = kernel_kind(name, tensor, *args)
                if kind not in self.warm:
                    raise RuntimeError(f"host device: Tensor.{name} into {' from '.join(kind[1:])} runs first inside a "
                                       "capture, where its module would load")
                refs = [weakref.ref(t) if isinstance(t, torch.Tensor) else (lambda v=t: v) for t in (tensor, *args)]

                def run():
                    live = [r() for r in refs]
                    if any(v is None for v in live):
                        raise AssertionError(f"host device: the graph's {name} reads a tensor the entry let go of")
                    saved[name](*live, **kwargs)

                g.work.append(run)
                return tensor
            return method

        def refused(name):
            def method(tensor, *args, **kwargs):
                if in_device_memory(tensor.data_ptr()):
                    raise RuntimeError(f"host device: Tensor.{name} (a read back to the host) during a capture")
                return saved[name](tensor, *args, **kwargs)
            return method

        self.capturing = g
        for name in saved:
            setattr(torch.Tensor, name, recorded(name) if name in ("copy_", "zero_") else refused(name))
        try:
            yield g
        finally:
            for name, method in saved.items():
                setattr(torch.Tensor, name, method)
            self.capturing = None


def kernel_kind(name, tensor, *args):
    """The torch kernel a copy_ or zero_ launches: its name and the dtypes it reads and writes."""
    return (name, str(tensor.dtype), *(str(a.dtype) for a in args if isinstance(a, torch.Tensor)))


def _warming(cuda):
    """torch.Tensor's copy_ and zero_ noting, outside a capture, each kernel kind run on device memory
    into cuda.warm (what a capture may then hold); undone by the returned function."""
    saved = {name: getattr(torch.Tensor, name) for name in ("copy_", "zero_")}

    def noting(name):
        def method(tensor, *args, **kwargs):
            if cuda.capturing is None and in_device_memory(tensor.data_ptr()):
                cuda.warm.add(kernel_kind(name, tensor, *args))
            return saved[name](tensor, *args, **kwargs)
        return method

    for name in saved:
        setattr(torch.Tensor, name, noting(name))
    return lambda: [setattr(torch.Tensor, name, method) for name, method in saved.items()]


class TorchOnHost(types.ModuleType):
    """The entry's `torch`: the real module but for torch.cuda and the device's allocations."""

    def __init__(self, cuda):
        super().__init__("torch")
        self.cuda = cuda

    def __getattr__(self, name):
        return getattr(torch, name)

    def empty(self, *args, **kwargs):
        t = torch.empty(*args, **kwargs)
        t.view(torch.uint8).fill_(0xFF)  # what was there before: garbage
        if self.cuda.capturing is not None:
            self.cuda.capturing.pool.append(t)
        return on_device(t)

    @staticmethod
    def from_numpy(array):
        return torch.from_numpy(array).as_subclass(HostArray)


class HostNvrtc(types.SimpleNamespace):
    """cuda.bindings.nvrtc: a program compiles host_device.cpp around its text into `folder`."""

    NVRTC_ERROR_COMPILATION = 6

    def __init__(self, cuda, folder, root, cxx):
        # fail_with: a compile log; the next compile fails with it, as NVRTC fails on an error
        super().__init__(cuda=cuda, folder=folder, root=root, cxx=cxx, programs=[], fail_with=None)

    def nvrtcCreateProgram(self, src, name, headers, sources, names):
        self.programs.append({"src": src.decode(), "library": None, "log": "", "destroyed": False})
        return 0, len(self.programs) - 1

    def nvrtcDestroyProgram(self, prog):
        self.programs[prog]["destroyed"] = True
        return (0,)

    def nvrtcCompileProgram(self, prog, count, options):
        opts = [o.decode() for o in options]
        if len(opts) != count:
            raise AssertionError(f"nvrtcCompileProgram: {count} options said, {len(opts)} given")
        cap = self.cuda.capability
        for must in (f"-arch=sm_{cap[0]}{cap[1]}", "--fmad=false"):  # the device's code; no contraction
            if must not in opts:
                raise AssertionError(f"NVRTC options {opts} lack {must}")
        defines = [o for o in opts if o.startswith("-D")]
        if len([o for o in defines if re.fullmatch(r"-DRG_ENTRY_HALF=\d+", o)]) != 1:
            raise AssertionError(f"NVRTC options {opts}: one -DRG_ENTRY_HALF=N wanted")
        if self.fail_with is not None:
            self.programs[prog]["log"], self.fail_with = self.fail_with, None
            return (self.NVRTC_ERROR_COMPILATION,)
        text = os.path.join(self.folder, f"program{prog}.cuh")
        with open(text, "w") as f:
            f.write(self.programs[prog]["src"])
        library = os.path.join(self.folder, f"program{prog}.so")
        # -std=c++20, not the entry's C++17: host_device.cpp includes an engine header (the real
        # NVRTC compile of the text is test_export.py's). -Bsymbolic: the text's kernels and their
        # shared memory have C linkage (rg_rows, smem); they bind to this library's own.
        p = subprocess.run([*self.cxx, "-std=c++20", "-O1", "-ffp-contract=off", "-fPIC", "-shared", "-Wno-unknown-pragmas",
                            "-Wl,-Bsymbolic", "-D__CUDACC_RTC__", f"-I{self.root}", f'-DEXPORTED_TEXT="{text}"', *defines,
                            os.path.join(self.root, "test", "export", "host_device.cpp"), "-o", library],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise AssertionError(f"the entry's text as host code: {p.stderr[-3000:]}")
        self.programs[prog]["library"] = library
        return (0,)

    def nvrtcGetCUBINSize(self, prog):
        return 0, len(self.programs[prog]["library"])

    def nvrtcGetCUBIN(self, prog, buffer):
        # The entry hands this buffer to cuModuleLoadData; here its bytes name the library.
        ctypes.memmove(buffer, self.programs[prog]["library"].encode(), len(buffer))
        return (0,)

    # As NVRTC's: the size counts the log's closing NUL, and the log is written into the buffer given
    # (cuda-python passes a bytes object's own memory).
    def nvrtcGetProgramLogSize(self, prog):
        return 0, len(self.programs[prog]["log"].encode()) + 1

    def nvrtcGetProgramLog(self, prog, buffer):
        log = self.programs[prog]["log"].encode() + b"\0"
        if len(buffer) < len(log):
            raise AssertionError(f"nvrtcGetProgramLog: a buffer of {len(buffer)} bytes for {len(log)}")
        ctypes.memmove(buffer, log, len(log))
        return (0,)


class CUfunction_attribute(enum.IntEnum):
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


class HostFunction:
    def __init__(self, library, name):
        self.library, self.name, self.max_dynamic = library, name, DEFAULT_SMEM


class HostDriver(types.SimpleNamespace):
    """cuda.bindings.driver: modules are host_device.cpp libraries; launches run them (or are
    captured). `reverse`: every grid's blocks last to first, each phase's items too. `launches`
    counts the launches run."""

    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_INVALID_HANDLE = 400
    CUDA_ERROR_NOT_FOUND = 500
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906

    def __init__(self, cuda, reverse=False):
        super().__init__(cuda=cuda, reverse=reverse, launches=0, CUfunction_attribute=CUfunction_attribute)
        self.CUstream = int

    def cuModuleLoadData(self, image):
        path = bytes(image).decode()
        if not os.path.exists(path):
            return self.CUDA_ERROR_INVALID_VALUE, None
        library = ctypes.CDLL(path)
        library.rg_host_launch.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                           ctypes.c_longlong, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        library.rg_host_has_kernel.argtypes = [ctypes.c_char_p]
        library.rg_host_pointers.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_int]
        library.rg_host_device = self.cuda.current  # loaded into the current device's context
        return 0, library

    def cuModuleGetFunction(self, module, name):
        if not module.rg_host_has_kernel(name):
            return self.CUDA_ERROR_NOT_FOUND, None
        return 0, HostFunction(module, name)

    def cuFuncSetAttribute(self, fn, attribute, value):
        # cuda-python 13.0 reads the attribute's .value (a plain int refused); later releases take
        # int(x). The member suits both.
        if attribute is not CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
            return (self.CUDA_ERROR_INVALID_VALUE,)
        if value > self.cuda.optin:
            return (self.CUDA_ERROR_INVALID_VALUE,)
        fn.max_dynamic = value
        return (0,)

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        capturing = self.cuda.capturing is not None
        if fn.library.rg_host_device != self.cuda.current:  # a module of another device's context
            return (self.CUDA_ERROR_INVALID_HANDLE,)
        self.cuda.check_current(f"a launch of {fn.name.decode()}")  # its pointers are device 0's
        if int(stream) != (CAPTURE_STREAM if capturing else DEFAULT_STREAM):
            return (self.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT if capturing else self.CUDA_ERROR_INVALID_HANDLE,)
        # extra: cuda-python takes an address there, 0 for none (None is a TypeError)
        if (gy, gz, by, bz) != (1, 1, 1, 1) or type(extra) is not int or extra != 0 or smem > fn.max_dynamic:
            return (self.CUDA_ERROR_INVALID_VALUE,)
        if not (1 <= gx <= 2**31 - 1 and 1 <= bx <= 1024):  # a grid of no block, a block over 1,024 threads
            return (self.CUDA_ERROR_INVALID_VALUE,)
        # kernelParams: an array of pointers, one per kernel parameter; the kernels take one, the Args.
        args_at = ctypes.c_uint64.from_address(params).value
        args = ctypes.string_at(args_at, fn.library.rg_host_args_size())
        self.check_pointers(fn, args)

        def run():  # no device check here: torch's replay makes the capture's device current itself
            self.check_pointers(fn, args)
            error = ctypes.create_string_buffer(400)
            if fn.library.rg_host_launch(fn.name, args, gx, bx, smem, int(self.reverse), error, len(error)):
                raise AssertionError(f"launch of {fn.name.decode()}: {error.value.decode()}")
            self.launches += 1

        if capturing:
            self.cuda.capturing.work.append(run)
        else:
            run()
        return (0,)

    @staticmethod
    def check_pointers(fn, args):
        pointers = (ctypes.c_ulonglong * 32)()
        count = fn.library.rg_host_pointers(args, pointers, len(pointers))
        stray = [hex(p) for p in pointers[:count] if p and not in_device_memory(p)]
        if stray:
            raise AssertionError(f"launch of {fn.name.decode()}: Args pointers {stray} are not live device memory")


def install(entry, folder, root, cxx, capability=(8, 0), optin=163 * 1024, reverse=False, current=INPUT_DEVICE):
    """Points an imported entry module at a host device (`current` the device current at a call);
    returns its driver (launch counts) and a function that gives torch.Tensor back its methods."""
    cuda = HostCuda(capability, optin)
    cuda.current = current
    restore = _warming(cuda)
    entry.torch = TorchOnHost(cuda)
    entry.nvrtc = HostNvrtc(cuda, folder, root, cxx)
    entry.driver = HostDriver(cuda, reverse)
    entry._RUN = None
    return entry.driver, restore

// nova._device_C: the Python face of the nova device's C++ part.
#include "Allocator.h"

#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/utils/pybind.h>
#include <torch/extension.h>

namespace nova::device {
at::Tensor asHost(const at::Tensor &t);
c10::intrusive_ptr<c10d::Backend> makeBackend(int rank, int size, py::object impl);
} // namespace nova::device

namespace {
using namespace nova::device;

py::dict statDict(const Stat &s) {
  py::dict d;
  d["current"] = s.current;
  d["peak"] = s.peak;
  d["allocated"] = s.allocated;
  d["freed"] = s.freed;
  return d;
}
} // namespace

PYBIND11_MODULE(_device_C, m) {
  m.doc() = "The nova device's allocator and host aliases (nova.device)";
  m.def("set_capacity", [](int device, uint64_t bytes) { allocator().setCapacity(device, bytes); });
  m.def("capacity", [](int device) { return allocator().capacity(device); });
  m.def("empty_cache", [](int device) { allocator().emptyCache(device); });
  m.def("reset_peak", [](int device) { allocator().resetPeaks(device); });
  m.def("set_current_device", &setCurrentDevice);
  m.def("current_device", &currentDevice);
  m.def("set_device_count", &setDeviceCount);
  m.def("device_count", &deviceCount);
  m.def("count_transfer", [](int device, int64_t toDevice, int64_t toHost) {
    allocator().countTransfer(device, toDevice, toHost);
  });
  m.def("stats", [](int device) {
    DeviceStats s = allocator().stats(device);
    py::dict d;
    d["allocated_bytes"] = statDict(s.allocatedBytes);
    d["reserved_bytes"] = statDict(s.reservedBytes);
    d["active"] = statDict(s.activeBlocks);
    d["segment"] = statDict(s.segments);
    d["num_alloc_retries"] = s.numAllocRetries;
    d["num_ooms"] = s.numOoms;
    d["host_to_device_bytes"] = s.hostToDeviceBytes;
    d["device_to_host_bytes"] = s.deviceToHostBytes;
    return d;
  });
  m.def("snapshot", [](int device) { return allocator().snapshot(device); });
  m.def("as_host", &asHost, "A nova tensor's memory as a CPU tensor (no copy)");
  m.def("make_backend", &makeBackend,
        "A c10d Backend forwarding every op to the Python object `impl` (nova.distributed)");
  m.def(
      "default_generator",
      [](int device) {
        return at::detail::getPrivateUse1Hooks().getDefaultGenerator(
            static_cast<c10::DeviceIndex>(device));
      },
      "The chip's default torch.Generator (torch.manual_seed seeds it)");
  m.attr("round_bytes") = py::int_(kRoundBytes);
}

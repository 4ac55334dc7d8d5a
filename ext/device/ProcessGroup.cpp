// The c10d Backend of `init_process_group("nova")`. c10d's Backend class cannot be
// subclassed from Python (its binding has no trampoline), and a Python
// ProcessGroup misses the ops FSDP2 and DTensor dispatch to a backend
// (_allgather_base, _reduce_scatter_base, ...). This Backend forwards every op to a
// Python object (nova.distributed.backend.NovaBackend), which moves the bytes with
// gloo and keeps the simulated clocks.
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/PyProcessGroup.hpp>
#include <torch/csrc/utils/pybind.h>
#include <torch/extension.h>

namespace nova::device {
namespace {
using c10d::Work;
using WorkPtr = c10::intrusive_ptr<Work>;

class PythonBackend : public c10d::Backend {
public:
  PythonBackend(int rank, int size, py::object impl)
      : Backend(rank, size), impl_(std::move(impl)) {}

  ~PythonBackend() override {
    py::gil_scoped_acquire gil;
    impl_ = py::object();
  }

  const std::string getBackendName() const override { return "nova"; }
  bool supportsCoalescing() const override { return true; }
  bool supportsSplitting() const override { return false; }

  void startCoalescing() override {
    py::gil_scoped_acquire gil;
    impl_.attr("start_coalescing")();
  }
  WorkPtr endCoalescing() override { return call("end_coalescing"); }

  WorkPtr broadcast(std::vector<at::Tensor> &t, const c10d::BroadcastOptions &o) override {
    return call("broadcast", t, o);
  }
  WorkPtr allreduce(std::vector<at::Tensor> &t, const c10d::AllreduceOptions &o) override {
    return call("allreduce", t, o);
  }
  WorkPtr allreduce_coalesced(std::vector<at::Tensor> &t,
                              const c10d::AllreduceCoalescedOptions &o) override {
    return call("allreduce_coalesced", t, o);
  }
  WorkPtr reduce(std::vector<at::Tensor> &t, const c10d::ReduceOptions &o) override {
    return call("reduce", t, o);
  }
  WorkPtr allgather(std::vector<std::vector<at::Tensor>> &out, std::vector<at::Tensor> &in,
                    const c10d::AllgatherOptions &o) override {
    return call("allgather", out, in, o);
  }
  WorkPtr _allgather_base(at::Tensor &out, at::Tensor &in,
                          const c10d::AllgatherOptions &o) override {
    return call("allgather_base", out, in, o);
  }
  WorkPtr allgather_coalesced(std::vector<std::vector<at::Tensor>> &out,
                              std::vector<at::Tensor> &in,
                              const c10d::AllgatherOptions &o) override {
    return call("allgather_coalesced", out, in, o);
  }
  WorkPtr allgather_into_tensor_coalesced(std::vector<at::Tensor> &out,
                                          std::vector<at::Tensor> &in,
                                          const c10d::AllgatherOptions &o) override {
    return call("allgather_into_tensor_coalesced", out, in, o);
  }
  WorkPtr gather(std::vector<std::vector<at::Tensor>> &out, std::vector<at::Tensor> &in,
                 const c10d::GatherOptions &o) override {
    return call("gather", out, in, o);
  }
  WorkPtr scatter(std::vector<at::Tensor> &out, std::vector<std::vector<at::Tensor>> &in,
                  const c10d::ScatterOptions &o) override {
    return call("scatter", out, in, o);
  }
  WorkPtr reduce_scatter(std::vector<at::Tensor> &out, std::vector<std::vector<at::Tensor>> &in,
                         const c10d::ReduceScatterOptions &o) override {
    return call("reduce_scatter", out, in, o);
  }
  WorkPtr _reduce_scatter_base(at::Tensor &out, at::Tensor &in,
                               const c10d::ReduceScatterOptions &o) override {
    return call("reduce_scatter_base", out, in, o);
  }
  WorkPtr reduce_scatter_tensor_coalesced(std::vector<at::Tensor> &out,
                                          std::vector<at::Tensor> &in,
                                          const c10d::ReduceScatterOptions &o) override {
    return call("reduce_scatter_tensor_coalesced", out, in, o);
  }
  WorkPtr alltoall_base(at::Tensor &out, at::Tensor &in, std::vector<int64_t> &outSplits,
                        std::vector<int64_t> &inSplits, const c10d::AllToAllOptions &o) override {
    return call("alltoall_base", out, in, outSplits, inSplits, o);
  }
  WorkPtr alltoall(std::vector<at::Tensor> &out, std::vector<at::Tensor> &in,
                   const c10d::AllToAllOptions &o) override {
    return call("alltoall", out, in, o);
  }
  WorkPtr send(std::vector<at::Tensor> &t, int dst, int tag) override {
    return call("send", t, dst, tag);
  }
  WorkPtr recv(std::vector<at::Tensor> &t, int src, int tag) override {
    return call("recv", t, src, tag);
  }
  WorkPtr barrier(const c10d::BarrierOptions &o) override { return call("barrier", o); }

  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override {
    py::gil_scoped_acquire gil;
    return impl_.attr("sequence_number")().cast<uint64_t>();
  }
  void abort() override {
    py::gil_scoped_acquire gil;
    impl_.attr("abort")();
  }
  void shutdown() override {
    py::gil_scoped_acquire gil;
    impl_.attr("shutdown")();
  }

private:
  // The Python op returns a torch.distributed.Work (a Python subclass); the holder
  // keeps that Python object alive as long as C++ holds the Work.
  template <typename... Args> WorkPtr call(const char *name, Args &&...args) {
    py::gil_scoped_acquire gil;
    py::object work = impl_.attr(name)(std::forward<Args>(args)...);
    return c10::make_intrusive<c10d::PyProcessGroup::PyWorkHolder>(work);
  }

  py::object impl_;
};
} // namespace

c10::intrusive_ptr<c10d::Backend> makeBackend(int rank, int size, py::object impl) {
  return c10::make_intrusive<PythonBackend>(rank, size, std::move(impl));
}
} // namespace nova::device

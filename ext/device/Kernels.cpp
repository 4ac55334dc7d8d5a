// The ATen kernels every PrivateUse1 backend provides in C++ (as PyTorch's
// OpenReg reference backend does): allocation, views and storage surgery,
// host<->device copies and reading a scalar. Compute kernels are Python
// (nova.device.kernels): they run ops as Nova programs on the simulator.
#include "Allocator.h"

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/as_strided_cpu_dispatch.h>
#include <ATen/ops/set_cpu_dispatch.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/native/CPUFallback.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace nova::device {
namespace {

constexpr c10::DispatchKeySet kNovaKeys(c10::DispatchKey::PrivateUse1);

at::Tensor emptyMemoryFormat(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                             std::optional<c10::Layout> layout,
                             std::optional<c10::Device> device, std::optional<bool> pin,
                             std::optional<c10::MemoryFormat> format) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "nova: only strided tensors");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin), "nova: pinned memory is a CPU property");
  c10::OptionalDeviceGuard guard(device);
  return at::detail::empty_generic(size, &allocator(), kNovaKeys,
                                   c10::dtype_or_default(dtype), format);
}

at::Tensor emptyStrided(c10::IntArrayRef size, c10::IntArrayRef stride,
                        std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                        std::optional<c10::Device> device, std::optional<bool> pin) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "nova: only strided tensors");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin), "nova: pinned memory is a CPU property");
  c10::OptionalDeviceGuard guard(device);
  return at::detail::empty_strided_generic(size, stride, &allocator(), kNovaKeys,
                                           c10::dtype_or_default(dtype));
}

at::Tensor asStrided(const at::Tensor &self, c10::SymIntArrayRef size,
                     c10::SymIntArrayRef stride, std::optional<c10::SymInt> offset) {
  return at::cpu::as_strided_symint(self, size, stride, std::move(offset));
}

const at::Tensor &resize(const at::Tensor &self, c10::SymIntArrayRef size,
                         std::optional<at::MemoryFormat> format) {
  return at::native::resize_(self, C10_AS_INTARRAYREF_SLOW(size), format);
}

at::Tensor reshapeAlias(const at::Tensor &self, c10::SymIntArrayRef size,
                        c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size),
                                    C10_AS_INTARRAYREF_SLOW(stride));
}

at::Tensor view(const at::Tensor &self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

// A nova tensor's bytes seen as a CPU tensor (no copy; keeps the storage alive).
at::Tensor hostAlias(const at::Tensor &t) {
  if (t.is_cpu())
    return t;
  auto storage = t.storage();
  return at::from_blob(
      t.data_ptr(), t.sizes(), t.strides(), [storage](void *) {},
      t.options().device(at::kCPU));
}

int64_t payloadBytes(const at::Tensor &t) { return t.numel() * t.element_size(); }

// Host<->device copies (nova<->nova copies are Nova programs, in Python).
at::Tensor copyFrom(const at::Tensor &self, const at::Tensor &dst, bool nonBlocking) {
  at::Tensor dstHost = hostAlias(dst);
  at::Tensor srcHost = hostAlias(self);
  dstHost.copy_(srcHost, nonBlocking);
  if (self.is_privateuseone() && !dst.is_privateuseone())
    allocator().countTransfer(self.device().index(), 0, payloadBytes(self));
  else if (!self.is_privateuseone() && dst.is_privateuseone())
    allocator().countTransfer(dst.device().index(), payloadBytes(dst), 0);
  return dst;
}

at::Tensor copyFromAndResize(const at::Tensor &self, const at::Tensor &dst) {
  at::native::resize_(dst, self.sizes(), std::nullopt);
  return copyFrom(self, dst, false);
}

at::Scalar localScalarDense(const at::Tensor &self) {
  allocator().countTransfer(self.device().index(), 0, self.element_size());
  return at::native::_local_scalar_dense_cpu(hostAlias(self));
}

at::Tensor &setTensor(at::Tensor &self, const at::Tensor &source) {
  return at::native::set_tensor_(self, source);
}

at::Tensor &setStorage(at::Tensor &self, at::Storage source) {
  return at::native::set_(self, source);
}

at::Tensor &setStorageOffset(at::Tensor &self, at::Storage storage, int64_t offset,
                             c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::cpu::set_(self, storage, offset, size, stride);
}

// nn.Module.to("nova") keeps parameters' identity (and so tied weights tied) only
// if a CPU tensor may take a nova tensor's data in place, as it may a CUDA one's;
// PyTorch's own check lists only its in-tree dense backends.
bool compatibleShallowCopy(const at::Tensor &self, const at::Tensor &from) {
  auto dense = [](const at::Tensor &t) {
    return t.layout() == at::kStrided && (t.is_cpu() || t.is_privateuseone());
  };
  if (dense(self) && dense(from))
    return true;
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set());
}

} // namespace

at::Tensor asHost(const at::Tensor &t) { return hostAlias(t); }

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", compatibleShallowCopy);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", compatibleShallowCopy);
  m.impl("empty.memory_format", emptyMemoryFormat);
  m.impl("empty_strided", emptyStrided);
  m.impl("as_strided", asStrided);
  m.impl("resize_", resize);
  m.impl("_reshape_alias", reshapeAlias);
  m.impl("view", view);
  m.impl("_copy_from", copyFrom);
  m.impl("_copy_from_and_resize", copyFromAndResize);
  m.impl("_local_scalar_dense", localScalarDense);
  m.impl("set_.source_Tensor", setTensor);
  m.impl("set_.source_Storage", setStorage);
  m.impl("set_.source_Storage_storage_offset", setStorageOffset);
}

} // namespace nova::device

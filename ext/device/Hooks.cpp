// What PyTorch asks the PrivateUse1 backend before using it, in C++ as
// PyTorch's OpenReg reference backend has it: availability and the generators
// (a chip's default one, the one under torch.nova.manual_seed, and new ones for
// torch.Generator("nova")), and resizing a storage in place (`storage.resize_()`,
// which FSDP2 uses to free and re-grow unsharded parameters). Registered when the
// module loads.
#include "Allocator.h"
#include "Generator.h"

#include <ATen/detail/PrivateUse1HooksInterface.h>

#include <c10/core/StorageImpl.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>

namespace nova::device {
namespace {

struct NovaHooks : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override {
    return static_cast<c10::DeviceIndex>(nova::device::deviceCount());
  }

  const at::Generator &getDefaultGenerator(c10::DeviceIndex index) const override {
    // One per chip, made on first use; a deque keeps the references handed out valid.
    static std::mutex mu;
    static std::deque<at::Generator> defaults;
    int chip = index < 0 ? currentDevice() : index;
    int chips = nova::device::deviceCount();
    TORCH_CHECK(chip < chips, "nova device index ", chip, " is out of range (", chips, " chips)");
    std::lock_guard<std::mutex> lock(mu);
    while (static_cast<int>(defaults.size()) <= chip)
      defaults.push_back(makeGenerator(static_cast<c10::DeviceIndex>(defaults.size())));
    return defaults[chip];
  }

  at::Generator getNewGenerator(c10::DeviceIndex index) const override {
    return makeGenerator(index);
  }

  void resizePrivateUse1Bytes(const c10::Storage &storage, size_t newsize) const override {
    c10::StorageImpl *impl = storage.unsafeGetStorageImpl();
    TORCH_CHECK(impl->resizable(), "nova: trying to resize a storage that is not resizable");
    size_t old = impl->nbytes();
    if (newsize == old)
      return;
    c10::Device device = impl->data_ptr().device();
    c10::DataPtr fresh = impl->allocator()->allocate(newsize);
    if (!fresh.get())
      fresh = c10::DataPtr(nullptr, device);
    if (old && newsize)
      std::memcpy(fresh.get(), impl->data(), std::min(old, newsize));
    impl->set_data_ptr_noswap(std::move(fresh));
    impl->set_nbytes(newsize);
  }
};

struct Register {
  Register() {
    static NovaHooks hooks;
    at::RegisterPrivateUse1HooksInterface(&hooks);
  }
} registerHooks;

} // namespace
} // namespace nova::device

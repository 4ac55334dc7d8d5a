// What PyTorch asks a PrivateUse1 backend beyond its kernels: whether it is there,
// and resizing a storage in place (`storage.resize_()`, which FSDP2 uses to free and
// re-grow unsharded parameters). Registered in C++: the Python hooks interface
// cannot resize.
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/StorageImpl.h>

#include <algorithm>
#include <cstring>

namespace nova::device {
namespace {

struct Hooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }

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

} // namespace

void registerHooks() {
  static Hooks hooks;
  at::RegisterPrivateUse1HooksInterface(&hooks);
}

} // namespace nova::device

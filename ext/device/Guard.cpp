// The device guard of `nova` devices: which chip new tensors and ops go to.
// One default stream per chip (torch.nova.Stream's simulated clocks are Python's).
#include "Allocator.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <atomic>

namespace nova::device {
namespace {

std::atomic<int> chips{1};

struct GuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;

  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old = getDevice();
    setDevice(d);
    return old;
  }
  c10::Device getDevice() const override {
    return c10::Device(kType, static_cast<c10::DeviceIndex>(currentDevice()));
  }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kType, "nova: expected a nova device, got ", d);
    if (d.has_index()) {
      TORCH_CHECK(d.index() < chips.load(), "nova: device index ", int(d.index()),
                  " is out of range: the target has ", chips.load(), " chip(s)");
      setCurrentDevice(d.index());
    }
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.has_index())
      setCurrentDevice(d.index());
  }
  c10::Stream getStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    return c10::Stream(c10::Stream::DEFAULT, s.device());
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(chips.load());
  }
  // Ops finish before they return (the simulator runs them); events are Python's.
  void record(void **, const c10::Stream &, const c10::DeviceIndex,
              const c10::EventFlag) const override {}
  void block(void *, const c10::Stream &) const override {}
  bool queryEvent(void *) const override { return true; }
  void destroyEvent(void *, const c10::DeviceIndex) const noexcept override {}
  bool queryStream(const c10::Stream &) const override { return true; }
  void synchronizeStream(const c10::Stream &) const override {}
  void synchronizeDevice(const c10::DeviceIndex) const override {}
};

} // namespace

void setDeviceCount(int n) { chips.store(n); }
int deviceCount() { return chips.load(); }

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

} // namespace nova::device

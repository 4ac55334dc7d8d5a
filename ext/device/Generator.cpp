// torch.Generator("nova"): a seed and a counter offset, as CUDA's Philox
// generators keep them. The random ops themselves are Nova programs
// (nova/device/random_forms.py); a kernel given one of these generators reads
// its seed and offset and advances the offset past the counters it draws, as
// it does for the chip's default generator (nova/device/random.py). The state
// is the same 16 bytes as torch.nova.get_rng_state(): int64 seed, int64 offset.
#include "Allocator.h"
#include "Generator.h"

#include <ATen/Functions.h>
#include <c10/core/GeneratorImpl.h>
#include <c10/core/TensorImpl.h>

#include <cstring>

namespace nova::device {
namespace {

// CUDA's default seed, as the default generators use (nova/device/random.py).
constexpr uint64_t kDefaultSeed = 67280421310721ULL;
constexpr size_t kStateBytes = 2 * sizeof(uint64_t);

class NovaGeneratorImpl : public c10::GeneratorImpl {
public:
  explicit NovaGeneratorImpl(c10::DeviceIndex index)
      : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, index),
                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)) {}

  void set_current_seed(uint64_t seed) override {
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t current_seed() const override { return seed_; }
  uint64_t seed() override {
    uint64_t fresh = c10::detail::getNonDeterministicRandom();
    set_current_seed(fresh);
    return fresh;
  }
  void set_offset(uint64_t offset) override { offset_ = offset; }
  uint64_t get_offset() const override { return offset_; }

  void set_state(const c10::TensorImpl &state) override {
    TORCH_CHECK(state.dtype() == caffe2::TypeMeta::Make<uint8_t>() &&
                    static_cast<size_t>(state.numel()) == kStateBytes,
                "a nova generator's state is a uint8 tensor of ", kStateBytes,
                " bytes (get_state()), got ", state.dtype().name(), " of ",
                state.numel(), " elements");
    uint64_t words[2];
    std::memcpy(words, state.data(), kStateBytes);
    seed_ = words[0];
    offset_ = words[1];
  }

  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    at::Tensor state = at::empty({static_cast<int64_t>(kStateBytes)}, at::kByte);
    uint64_t words[2] = {seed_, offset_};
    std::memcpy(state.data_ptr(), words, kStateBytes);
    return state.getIntrusivePtr();
  }

private:
  NovaGeneratorImpl *clone_impl() const override {
    auto *copy = new NovaGeneratorImpl(device().index());
    copy->seed_ = seed_;
    copy->offset_ = offset_;
    return copy;
  }

  uint64_t seed_ = kDefaultSeed;
  uint64_t offset_ = 0;
};

} // namespace

at::Generator makeGenerator(c10::DeviceIndex index) {
  return at::make_generator<NovaGeneratorImpl>(index < 0 ? currentDevice() : index);
}

} // namespace nova::device

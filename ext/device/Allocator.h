// The nova device's caching allocator (nova._device_C).
//
// A nova tensor's bytes live in host memory (the simulator computes on them);
// what is simulated is the chip's HBM: every block also has an address in the
// chip's HBM address space, and the capacity, the statistics and the out-of-
// memory error follow CUDA's caching allocator, so torch.nova.memory_* reads
// like torch.cuda.memory_*.
#pragma once

#include <c10/core/Allocator.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace nova::device {

// Every allocation is rounded up to this many bytes (CUDA's minimum block).
constexpr size_t kRoundBytes = 512;

struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;  // running total of increases
  int64_t freed = 0;      // running total of decreases
  void add(int64_t n);
  void sub(int64_t n);
  void resetPeak() { peak = current; }
};

struct Block {
  size_t size = 0;       // rounded size
  uint64_t address = 0;  // simulated HBM address
  void *host = nullptr;
};

struct DeviceStats {
  Stat allocatedBytes, reservedBytes, activeBlocks, segments;
  int64_t numAllocRetries = 0, numOoms = 0;
  int64_t hostToDeviceBytes = 0, deviceToHostBytes = 0;
};

class CachingAllocator final : public c10::Allocator {
public:
  c10::DataPtr allocate(size_t nbytes) override;
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void *dest, const void *src, std::size_t count) const override;

  void setCapacity(int device, uint64_t bytes);
  uint64_t capacity(int device);
  void emptyCache(int device);
  DeviceStats stats(int device);
  void resetPeaks(int device);
  void countTransfer(int device, int64_t toDevice, int64_t toHost);
  // (address, size, allocated) of every block, for memory_snapshot().
  std::vector<std::tuple<uint64_t, uint64_t, bool>> snapshot(int device);
  static void release(void *ctx);

private:
  struct Device {
    uint64_t capacity = 0;
    std::multimap<size_t, Block> cached;       // free blocks kept for reuse
    std::map<uint64_t, uint64_t> freeRanges;   // HBM address -> length
    bool rangesInit = false;
    DeviceStats stats;
  };
  Device &dev(int device);
  bool takeRange(Device &d, uint64_t size, uint64_t &address);
  void giveRange(Device &d, uint64_t address, uint64_t size);
  void releaseCached(Device &d);
  void free(void *host);

  std::mutex mu_;
  std::vector<Device> devices_;
  std::unordered_map<void *, std::pair<int, Block>> live_;  // host pointer -> block
};

CachingAllocator &allocator();

// The device new tensors go to (torch.nova.set_device; the allocator does not
// call back into Python's device guard).
int currentDevice();
void setCurrentDevice(int device);

// Chips of the target (nova:0 .. nova:N-1); set by torch.nova.set_target.
void setDeviceCount(int n);
int deviceCount();

} // namespace nova::device

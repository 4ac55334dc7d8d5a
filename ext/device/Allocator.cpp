#include "Allocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <sstream>

namespace nova::device {

void Stat::add(int64_t n) {
  current += n;
  allocated += n;
  if (current > peak)
    peak = current;
}

void Stat::sub(int64_t n) {
  current -= n;
  freed += n;
}

namespace {
std::string formatBytes(uint64_t n) {
  std::ostringstream out;
  out.precision(2);
  out << std::fixed;
  if (n >= (1ull << 30))
    out << double(n) / double(1ull << 30) << " GiB";
  else if (n >= (1ull << 20))
    out << double(n) / double(1ull << 20) << " MiB";
  else if (n >= (1ull << 10))
    out << double(n) / double(1ull << 10) << " KiB";
  else
    out << n << " bytes";
  return out.str();
}
} // namespace

namespace {
// Per thread, as CUDA's current device is (the autograd engine's device
// threads set theirs through the device guard).
thread_local int current = 0;
} // namespace

int currentDevice() { return current; }
void setCurrentDevice(int device) { current = device; }

CachingAllocator &allocator() {
  static CachingAllocator instance;
  return instance;
}

namespace {
// Storages made without a tensor (torch.UntypedStorage(n, device="nova"),
// torch.load's restore) find the allocator by device type.
struct Registration {
  Registration() { c10::SetAllocator(c10::DeviceType::PrivateUse1, &allocator()); }
} registration;
} // namespace

CachingAllocator::Device &CachingAllocator::dev(int device) {
  TORCH_CHECK(device >= 0 && device < 1024, "nova: bad device index ", device);
  if (size_t(device) >= devices_.size())
    devices_.resize(device + 1);
  return devices_[device];
}

bool CachingAllocator::takeRange(Device &d, uint64_t size, uint64_t &address) {
  if (!d.rangesInit) {
    d.freeRanges[0] = d.capacity;
    d.rangesInit = true;
  }
  for (auto it = d.freeRanges.begin(); it != d.freeRanges.end(); ++it) {
    if (it->second < size)
      continue;
    address = it->first;
    uint64_t rest = it->second - size;
    d.freeRanges.erase(it);
    if (rest)
      d.freeRanges[address + size] = rest;
    return true;
  }
  return false;
}

void CachingAllocator::giveRange(Device &d, uint64_t address, uint64_t size) {
  auto it = d.freeRanges.emplace(address, size).first;
  auto next = std::next(it);
  if (next != d.freeRanges.end() && it->first + it->second == next->first) {
    it->second += next->second;
    d.freeRanges.erase(next);
  }
  if (it != d.freeRanges.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      d.freeRanges.erase(it);
    }
  }
}

void CachingAllocator::releaseCached(Device &d) {
  for (auto &[size, block] : d.cached) {
    c10::free_cpu(block.host);
    giveRange(d, block.address, block.size);
    d.stats.reservedBytes.sub(int64_t(block.size));
    d.stats.segments.sub(1);
  }
  d.cached.clear();
}

c10::DataPtr CachingAllocator::allocate(size_t nbytes) {
  int device = currentDevice();
  c10::Device where(c10::DeviceType::PrivateUse1, device);
  if (nbytes == 0)
    return {nullptr, nullptr, &c10::detail::deleteNothing, where};
  size_t size = (nbytes + kRoundBytes - 1) / kRoundBytes * kRoundBytes;
  std::lock_guard<std::mutex> lock(mu_);
  Device &d = dev(device);
  TORCH_CHECK(d.capacity > 0, "nova: the device's HBM capacity is not set "
                              "(import nova registers the device)");
  Block block;
  auto hit = d.cached.find(size);
  if (hit != d.cached.end()) {
    block = hit->second;
    d.cached.erase(hit);
  } else {
    bool fits = d.stats.reservedBytes.current + int64_t(size) <= int64_t(d.capacity) &&
                takeRange(d, size, block.address);
    if (!fits && !d.cached.empty()) {
      // As CUDA's allocator does: give the cached blocks back and try again.
      d.stats.numAllocRetries += 1;
      releaseCached(d);
      fits = takeRange(d, size, block.address);
    }
    if (!fits) {
      d.stats.numOoms += 1;
      uint64_t reserved = d.stats.reservedBytes.current;
      uint64_t allocated = d.stats.allocatedBytes.current;
      TORCH_CHECK_WITH(
          OutOfMemoryError, false, "nova out of memory. Tried to allocate ",
          formatBytes(size), ". nova:", device, " has a total capacity of ",
          formatBytes(d.capacity), " of which ", formatBytes(d.capacity - reserved),
          " is free. Of the allocated memory ", formatBytes(allocated),
          " is allocated by PyTorch, and ", formatBytes(reserved - allocated),
          " is reserved by PyTorch but unallocated. The capacity is the "
          "target's hbm_bytes (torch.nova.set_target chooses the target).");
    }
    block.size = size;
    block.host = c10::alloc_cpu(size);
    d.stats.reservedBytes.add(int64_t(size));
    d.stats.segments.add(1);
  }
  d.stats.allocatedBytes.add(int64_t(size));
  d.stats.activeBlocks.add(1);
  live_[block.host] = {device, block};
  return {block.host, block.host, &CachingAllocator::release, where};
}

void CachingAllocator::release(void *ctx) { allocator().free(ctx); }

void CachingAllocator::free(void *host) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(host);
  TORCH_INTERNAL_ASSERT(it != live_.end(), "nova: freeing an unknown block");
  auto [device, block] = it->second;
  live_.erase(it);
  Device &d = dev(device);
  d.stats.allocatedBytes.sub(int64_t(block.size));
  d.stats.activeBlocks.sub(1);
  d.cached.emplace(block.size, block);
}

void CachingAllocator::copy_data(void *dest, const void *src, std::size_t count) const {
  std::memcpy(dest, src, count);
}

void CachingAllocator::setCapacity(int device, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  Device &d = dev(device);
  TORCH_CHECK(d.stats.reservedBytes.current == 0 || bytes == d.capacity,
              "nova: the target cannot change while tensors are on nova:", device);
  d.capacity = bytes;
  d.freeRanges.clear();
  d.rangesInit = false;
}

uint64_t CachingAllocator::capacity(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  return dev(device).capacity;
}

void CachingAllocator::emptyCache(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  releaseCached(dev(device));
}

DeviceStats CachingAllocator::stats(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  return dev(device).stats;
}

void CachingAllocator::resetPeaks(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceStats &s = dev(device).stats;
  s.allocatedBytes.resetPeak();
  s.reservedBytes.resetPeak();
  s.activeBlocks.resetPeak();
  s.segments.resetPeak();
}

void CachingAllocator::countTransfer(int device, int64_t toDevice, int64_t toHost) {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceStats &s = dev(device).stats;
  s.hostToDeviceBytes += toDevice;
  s.deviceToHostBytes += toHost;
}

std::vector<std::tuple<uint64_t, uint64_t, bool>> CachingAllocator::snapshot(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::tuple<uint64_t, uint64_t, bool>> out;
  for (auto &[host, entry] : live_)
    if (entry.first == device)
      out.emplace_back(entry.second.address, entry.second.size, true);
  for (auto &[size, block] : dev(device).cached)
    out.emplace_back(block.address, block.size, false);
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace nova::device

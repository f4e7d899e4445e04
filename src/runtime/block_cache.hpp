// Large host buffers, recycled as framework allocators do: glibc hands a freed
// 16 MiB block back to the OS, and the next buffer of that size then takes a
// page fault every 4 KiB on first touch, a large share of a short CPU kernel's
// time and of a sampled oracle check (the measurements: docs/journal.md,
// 2026-12-03 and 2026-12-04). Blocks of at least 1 MiB wait for a request they
// hold (up to twice its size), at most 1 GiB of them; contents are not cleared.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

namespace tessera::runtime {

class BlockCache {
 public:
  static constexpr std::size_t kMin = std::size_t{1} << 20, kMaxHeld = std::size_t{1} << 30;
  // 64-byte aligned; `bytes` a multiple of 64. Null when out of memory.
  void* take(std::size_t bytes);
  void give(void* p, std::size_t bytes);

 private:
  std::mutex mu_;
  std::multimap<std::size_t, void*> free_;  // by the size they were given back under
  std::size_t held_ = 0;
};

// The process's cache (never destroyed: buffers may be freed by other
// statics' destructors at exit).
BlockCache& host_blocks();

// A standard allocator over host_blocks(), for containers of large buffers.
template <class T>
struct RecyclingAllocator {
  using value_type = T;
  RecyclingAllocator() = default;
  template <class U>
  RecyclingAllocator(const RecyclingAllocator<U>&) {}
  static std::size_t rounded(std::size_t n) { return (n * sizeof(T) + 63) / 64 * 64; }
  T* allocate(std::size_t n) {
    void* p = host_blocks().take(rounded(n));
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) { host_blocks().give(p, rounded(n)); }
  template <class U>
  bool operator==(const RecyclingAllocator<U>&) const {
    return true;
  }
};

}  // namespace tessera::runtime

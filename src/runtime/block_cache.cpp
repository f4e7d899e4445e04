#include "runtime/block_cache.hpp"

namespace tessera::runtime {

void* BlockCache::take(std::size_t bytes) {
  if (bytes >= kMin) {
    std::lock_guard<std::mutex> lock(mu_);
    // The smallest free block that holds `bytes`, if it is at most twice as
    // big (it is given back under the smaller size: only its capacity is lost).
    if (auto it = free_.lower_bound(bytes); it != free_.end() && it->first <= 2 * bytes) {
      void* p = it->second;
      held_ -= it->first;
      free_.erase(it);
      return p;
    }
  }
  return std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
}

void BlockCache::give(void* p, std::size_t bytes) {
  if (!p) return;
  if (bytes >= kMin) {
    std::lock_guard<std::mutex> lock(mu_);
    if (held_ + bytes <= kMaxHeld) {
      free_.emplace(bytes, p);
      held_ += bytes;
      return;
    }
  }
  std::free(p);
}

BlockCache& host_blocks() {
  static BlockCache* cache = new BlockCache;
  return *cache;
}

}  // namespace tessera::runtime

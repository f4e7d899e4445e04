#include "runtime/block_cache.hpp"

#include <map>
#include <mutex>

namespace tessera::runtime {

namespace {

std::mutex mu;
std::multimap<std::size_t, void*>* free_blocks = new std::multimap<std::size_t, void*>;  // never destroyed
std::size_t held = 0;

}  // namespace

void* BlockCache::take(std::size_t bytes) {
  if (bytes >= kMin) {
    std::lock_guard<std::mutex> lock(mu);
    // The smallest free block that holds `bytes`, if it is at most twice as
    // big (it is given back under the smaller size: only its capacity is lost).
    if (auto it = free_blocks->lower_bound(bytes); it != free_blocks->end() && it->first <= 2 * bytes) {
      void* p = it->second;
      held -= it->first;
      free_blocks->erase(it);
      return p;
    }
  }
  return std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
}

void BlockCache::give(void* p, std::size_t bytes) {
  if (!p) return;
  if (bytes >= kMin) {
    std::lock_guard<std::mutex> lock(mu);
    if (held + bytes <= kMaxHeld) {
      free_blocks->emplace(bytes, p);
      held += bytes;
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

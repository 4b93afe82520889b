// Stable 64-bit hashing for the parameter server: which PS task owns a sparse id, which row shard
// holds it, and the keys of the counter-based initializers. Unlike absl::Hash these never change
// between processes or builds, because every PS and every client must agree on them.
#pragma once

#include <cstdint>
#include <string_view>

namespace tj {

// SplitMix64's finalizer: a bijection on 64-bit values with good avalanche.
constexpr uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// SplitMix64 of one value: the mix of value + golden ratio.
constexpr uint64_t SplitMix64(uint64_t x) { return Mix64(x + 0x9e3779b97f4a7c15ULL); }

// FNV-1a over the bytes, then mixed: a name's stable fingerprint.
constexpr uint64_t Fingerprint64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return Mix64(h);
}

// The PS task that owns sparse id `id` among `num_ps` tasks.
inline int PsTaskOfId(int64_t id, int num_ps) {
  return static_cast<int>(SplitMix64(static_cast<uint64_t>(id)) % static_cast<uint64_t>(num_ps));
}

// The hash a PS uses inside a table (row shard, probe position). Salted so that it is independent
// of PsTaskOfId: a PS that owns only the ids with an even SplitMix64 must still fill all of its
// slots.
inline uint64_t RowHash(int64_t id) {
  return SplitMix64(static_cast<uint64_t>(id) ^ 0x5bd1e9955bd1e995ULL);
}

}  // namespace tj

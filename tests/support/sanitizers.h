// Whether this test binary is built with a sanitizer (scripts/sanitize.sh, TJ_SANITIZE=...):
// tests that assert a real process's memory (its RSS, its peak VmHWM) skip under the sanitizers
// whose allocator and shadow memory make that process larger than the bound the test asserts.
// g++ defines __SANITIZE_ADDRESS__/__SANITIZE_THREAD__; clang (before 14's g++-compatible macros)
// answers __has_feature.
#pragma once

namespace tj::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#else
inline constexpr bool kThreadSanitizer = false;
#endif

// The skip message of a memory-bound test under ASan (docs/sanitizers.md).
inline constexpr char kAsanMemoryBoundSkip[] =
    "asserts the real tj-ps's memory against a tight bound; under ASan its allocator's quarantine "
    "of freed memory (256 MiB by default) and its shadow memory make the process larger than the "
    "bound: a memory-size assertion, not a memory error (docs/sanitizers.md)";

// The same under TSan, whose allocator and shadow memory also add to the PS's peak.
inline constexpr char kTsanMemoryBoundSkip[] =
    "asserts the real tj-ps's peak memory against a tight bound; TSan's allocator and shadow "
    "memory add to it (70 MiB measured against 48): a memory-size assertion, not a race "
    "(docs/sanitizers.md)";

}  // namespace tj::testing

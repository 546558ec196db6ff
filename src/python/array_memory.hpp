// Memory for the large arrays the module writes. Each is an anonymous mapping of 4 KiB pages, mapped whole when it
// is made (MADV_POPULATE_WRITE); when its array is released, the mapping is kept, its pages still in place, for the
// next array of the same size, up to a bound. A reader that takes a tensor, uses it and drops it before taking the
// next (a conversion, a quantizer, a checksum) then has the next one decoded into pages it already has: the first
// touch of new pages, which the kernel must zero, took 72% of such a loop over a Q4_K GGUF (perf, clear_page_erms),
// five times the decoding. The kept pages are not marked MADV_FREE: on this machine's VM a write to a page so marked
// cost as much as a new page's first touch even with no memory pressure (a 256 MiB array rewritten in 0.34 s
// against 0.007 s), so up to the bound, released arrays stay in the process's memory. 4 KiB pages, not transparent
// huge ones: on this VM a huge page's first touch costs several times as much (docs/benchmarks.md, section
// "Python").
#pragma once

#include <cstddef>
#include <memory>

namespace tensorfs::python {

// Arrays of at least this many bytes get their memory here; smaller ones are the framework's own.
inline constexpr std::size_t kLargeArray = std::size_t{4} << 20;

// `bytes` (at least kLargeArray) of memory, kept while the pointer or a copy of it lives; its contents are
// unspecified (old bytes of a released array, or zeros). nullptr when the mapping fails (the framework's allocator
// is used instead).
std::shared_ptr<char> array_memory(std::size_t bytes);

}  // namespace tensorfs::python

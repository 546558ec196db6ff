// Memory for the arrays the module writes, owned by the module (not numpy or torch), so that a read interrupted by
// Ctrl-C can go on writing into it after its array is gone. A large array's is an anonymous mapping of 4 KiB pages,
// mapped whole when it is made (MADV_POPULATE_WRITE); when its array is released, the mapping is kept, its pages
// still in place, for the next array of the same size, up to a bound. A reader that takes a tensor, uses it and
// drops it before taking the next (a conversion, a quantizer, a checksum) then has the next one decoded into pages it
// already has: the first touch of new pages, which the kernel must zero, took 72% of such a loop over a Q4_K GGUF
// (perf, clear_page_erms), five times the decoding. The kept pages are not marked MADV_FREE: on this machine's VM a
// write to a page so marked cost as much as a new page's first touch even with no memory pressure (a 256 MiB array
// rewritten in 0.34 s against 0.007 s), so up to the bound, released arrays stay in the process's memory until
// release_kept_memory(). 4 KiB pages, not transparent huge ones: on this VM a huge page's first touch costs several
// times as much (docs/benchmarks.md, section "Python").
#pragma once

#include <cstddef>
#include <memory>

namespace tensorfs::python {

// Arrays of at least this many bytes get their memory from these mappings; smaller ones from the heap.
inline constexpr std::size_t kLargeArray = std::size_t{4} << 20;

// `bytes` of memory for an array, kept while the pointer or a copy of it lives (its array, and the read that writes
// it: a read Ctrl-C left under way writes on into memory it still holds), aligned for any element; its contents are
// unspecified (old bytes of a released array, or zeros). The heap's when a mapping fails. Throws std::bad_alloc.
std::shared_ptr<char> array_memory(std::size_t bytes);

// Unmaps the memory kept for reuse (tensorfs.release_memory()); returns how many bytes that was.
std::size_t release_kept_memory();

}  // namespace tensorfs::python

// Independent jobs run on several threads at once: the headers of a model's shards (a remote store answers many
// requests in flight far sooner than the same requests one after another), the pieces of tensors decoded.
#pragma once

#include <cstddef>
#include <functional>

namespace tensorfs {

// Runs job(0) .. job(count - 1) on up to `threads` threads (the calling one included) and returns when all are
// done. When jobs throw, the exception of the lowest index is rethrown after all have finished.
void in_parallel(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& job);

}  // namespace tensorfs

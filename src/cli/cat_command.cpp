// `tensorfs cat SOURCE TENSOR [--raw|--f32|--npy|--bf16|--f16]`: one tensor's file to stdout, as a mount would show it.
// The bytes go through Content in bounded chunks, so a tensor of any size streams in constant memory.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <vector>

#include "arguments.hpp"
#include "commands.hpp"
#include "model_choice.hpp"
#include "tensorfs/engine.hpp"
#include "tensorfs/errors.hpp"
#include "text_output.hpp"

namespace tensorfs::cli {
namespace {

// Decoded chunks kept while streaming: enough for reading ahead, small next to a big tensor.
constexpr std::uint64_t kCatCacheBudget = std::uint64_t{16} << 20;

void write_all(const char* data, std::size_t length) {
    while (length > 0) {
        const ssize_t written = ::write(STDOUT_FILENO, data, length);
        if (written < 0 && errno == EINTR) continue;
        if (written < 0) throw std::runtime_error(std::string("write error: ") + std::strerror(errno));
        data += written;
        length -= static_cast<std::size_t>(written);
    }
}

}  // namespace

int cat_command(const Arguments& args) {
    const SplitArguments split = split_arguments(args, {"--raw", "--f32", "--npy", "--bf16", "--f16"}, kSourceFlags);
    if (!split.error.empty()) return usage_error(split.error);
    Settings settings;
    if (const std::string error = take_source_flags(split, settings); !error.empty()) return usage_error(error);
    if (const std::string problem = positional_problem("cat", split.positional, {"SOURCE", "TENSOR"});
        !problem.empty()) {
        return usage_error(problem);
    }
    if (split.flags.size() > 1) return usage_error("cat takes one of --f32, --npy, --bf16, --f16, --raw");
    const std::string view = split.flags.empty() ? "--f32" : split.flags.front();
    if (::isatty(STDOUT_FILENO)) {
        return failure("cat writes binary data, not to a terminal; redirect it to a file or a pipe (> tensor.f32)");
    }
    EngineNeeds needs;
    needs.decoded_budget = kCatCacheBudget;
    const Engine engine(split.positional[0], settings, needs);
    engine.require_model(kModelFlag);
    const std::optional<std::uint32_t> tensor = engine.find(split.positional[1]);
    if (!tensor) {
        const std::string meant = engine.nearest_name(split.positional[1]);
        return failure(split.positional[0] + ": no tensor named '" + split.positional[1] + "'" +
                       (meant.empty() ? "" : "; did you mean '" + visible(meant) + "'?") + " (tensorfs ls lists them)");
    }
    const Tensor& chosen = engine.catalog().tensors[*tensor];
    if (view != "--raw" && !engine.tree().has_dequant(*tensor)) {
        return failure(visible(chosen.name) + ": " + visible(why_no_values(chosen)) + "; use --raw");
    }
    const NodeKind kind = view == "--raw"    ? NodeKind::Raw
                          : view == "--npy"  ? NodeKind::DequantNpy
                          : view == "--bf16" ? NodeKind::DequantBf16
                          : view == "--f16"  ? NodeKind::DequantF16
                                             : NodeKind::DequantF32;
    const Node node{kind, *tensor};

    Content& content = engine.content();
    // Reads of whole decoded chunks, so that no chunk is decoded twice.
    std::vector<char> chunk(content.chunk_bytes());
    const std::uint64_t size = content.size(node);
    // dequant.npy starts with its header: read it alone so that the reads of values start on chunk boundaries.
    const std::size_t first_length = kind == NodeKind::DequantNpy ? content.npy_header(*tensor).size() : chunk.size();
    for (std::uint64_t offset = 0; offset < size;) {
        const std::size_t got = content.read(node, offset, offset == 0 ? first_length : chunk.size(), chunk.data());
        if (got == 0) throw IoError(visible(chosen.name) + ": the source ended early");
        write_all(chunk.data(), got);
        offset += got;
    }
    return 0;
}

}  // namespace tensorfs::cli

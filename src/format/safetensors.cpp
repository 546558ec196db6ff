// A safetensors model given as files: one file, or every *.safetensors of a folder (transformers and
// diffusers shard names such as model-00001-of-00003.safetensors need nothing special: they are files).
#include <system_error>

#include "formats.hpp"
#include "safetensors_assembly.hpp"
#include "safetensors_header.hpp"

namespace tensorfs {
namespace fs = std::filesystem;

namespace {

// `file` relative to `base`, in '/' form. Lexical on absolute paths, so that a file that is a symlink (as in a
// Hugging Face cache snapshot) keeps the name it has in its folder.
std::string display_path(const fs::path& file, const fs::path& base) {
    std::error_code error;
    const fs::path absolute_file = fs::absolute(file, error).lexically_normal();
    const fs::path absolute_base = fs::absolute(base.empty() ? fs::path(".") : base, error).lexically_normal();
    const fs::path relative = absolute_file.lexically_relative(absolute_base);
    return relative.empty() ? file.filename().generic_string() : relative.generic_string();
}

}  // namespace

Catalog open_safetensors_files(const std::vector<fs::path>& files, const fs::path& base) {
    Problems problems;
    safetensors::CatalogAssembly assembly(problems);
    for (const auto& file : files) {
        const std::string path = file.string();
        if (auto header = safetensors::read_header(path, problems)) {
            const std::uint64_t size = header->file_size;
            assembly.add_file(SourceFile{path, display_path(file, base), size}, std::move(*header));
        }
    }
    problems.throw_if_any();
    return assembly.take();
}

}  // namespace tensorfs

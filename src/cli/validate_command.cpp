// `tensorfs validate SOURCE`: every header rule checked, every problem printed, nothing mounted.
#include <cstdio>

#include "arguments.hpp"
#include "commands.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/open_source.hpp"
#include "tensorfs/tree.hpp"

namespace tensorfs::cli {

int validate_command(const Arguments& args) {
    const SplitArguments split = split_arguments(args, {}, kSourceFlags);
    if (!split.error.empty()) return usage_error(split.error);
    if (split.positional.size() != 1) return usage_error("validate needs SOURCE");
    SourceOptions options;
    if (const std::string error = take_source_flags(split, options); !error.empty()) return usage_error(error);
    const std::string& source = split.positional[0];
    try {
        const Catalog catalog = open_catalog(source, options);
        const Tree tree(catalog);  // names that cannot become directories are problems too
        std::printf("%s: valid %s, %zu tensors in %zu file(s)\n", source.c_str(), catalog.format.c_str(),
                    catalog.tensors.size(), catalog.files.size());
        return 0;
    } catch (const InvalidSource& invalid) {
        for (const auto& problem : invalid.problems()) std::fprintf(stderr, "%s\n", problem.line().c_str());
        return 1;
    }
}

}  // namespace tensorfs::cli

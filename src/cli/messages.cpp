#include <cstdio>

#include "commands.hpp"

namespace tensorfs::cli {

int usage_error(const std::string& message) {
    std::fprintf(stderr, "tensorfs: %s; try 'tensorfs --help'\n", message.c_str());
    return 1;
}

int failure(const std::string& message) {
    std::fprintf(stderr, "tensorfs: %s\n", message.c_str());
    return 1;
}

}  // namespace tensorfs::cli

// Where remote sources' disk cache lives when no cache_dir= says (source_options.hpp).
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

#include "tensorfs/source_options.hpp"

namespace tensorfs {

std::filesystem::path default_cache_dir() {
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') {
        return std::filesystem::path(xdg) / "tensorfs";
    }
    const char* home = std::getenv("HOME");
    if (home == nullptr || home[0] != '/') {
        const passwd* user = ::getpwuid(::getuid());
        home = user != nullptr ? user->pw_dir : "/tmp";
    }
    return std::filesystem::path(home) / ".cache" / "tensorfs";
}

}  // namespace tensorfs

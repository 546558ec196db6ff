// Opening a remote object: one request for its first bytes (which the parsers read first anyway), which records its
// size and identity (ETag, else Last-Modified); every later request is checked against them (range_requests.hpp).
// When the disk cache remembers the URL and still holds its first block, the request is conditional
// (If-None-Match), and a 304 answer, which has no body, lets the cache give the identity and the bytes.
#pragma once

#include <time.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "remote_context.hpp"

namespace tensorfs::remote {

// What opening an object learned of it.
struct Identity {
    std::uint64_t size = 0;
    std::string etag;            // empty when the server gave none
    std::string last_modified;   // empty when the server gave none
    timespec modified{};
};

// What the first request brought.
struct Opened {
    Identity identity;
    std::string head;      // the first bytes: the whole file when it is short
    std::string location;  // where the URL redirected to; empty when it did not
    // The folder the disk cache remembered for the URL, when it was opened as remembered (nothing to record then).
    std::optional<std::filesystem::path> remembered_folder;
};

// Asks for the first bytes of the object at `url`, named `name` in messages. nullopt when the server says it does
// not exist (404, 410). Throws SourceError naming it when it cannot be reached, refuses the credentials or cannot
// serve byte ranges.
std::optional<Opened> ask_first_bytes(RemoteContext& context, const std::string& name, const std::string& url);

}  // namespace tensorfs::remote

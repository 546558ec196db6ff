// How a mount started by a program (the CSI plugin, which gives -o csi_volume=) tells it why the source could not be
// mounted: one JSON line on stderr, {"error": {"kind": "not_found", "message": "tensorfs: FILE: WHAT"}}, in place of
// the lines for a user. The plugin answers with the kind's gRPC code and the message, reading no words.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tensorfs/errors.hpp"

namespace tensorfs {

struct MountFailure {
    ErrorKind kind = ErrorKind::InvalidSource;
    std::string message;
};

// The line (without its newline) that says `failure`.
std::string failure_record(const MountFailure& failure);
// The failure a line says; nullopt for any other line.
std::optional<MountFailure> read_failure_record(std::string_view line);

}  // namespace tensorfs

#include "tensorfs/mount_failure.hpp"

#include <nlohmann/json.hpp>

namespace tensorfs {

std::string failure_record(const MountFailure& failure) {
    nlohmann::ordered_json record;
    record["error"]["kind"] = kind_name(failure.kind);
    record["error"]["message"] = failure.message;
    // Replaced, not thrown on: a message holds what the source named, which need not be UTF-8.
    return record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<MountFailure> read_failure_record(std::string_view line) {
    const auto record = nlohmann::json::parse(line, nullptr, false);
    if (!record.is_object() || !record.contains("error") || !record["error"].is_object()) return std::nullopt;
    const auto& error = record["error"];
    const auto kind = error.find("kind");
    const auto message = error.find("message");
    if (kind == error.end() || !kind->is_string() || message == error.end() || !message->is_string()) {
        return std::nullopt;
    }
    const auto named = kind_named(kind->get<std::string>());
    if (!named) return std::nullopt;
    return MountFailure{*named, message->get<std::string>()};
}

}  // namespace tensorfs

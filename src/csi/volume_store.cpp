#include "volume_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace tensorfs::csi {
namespace {

// FNV-1a: a file name of fixed length for any target path (the file holds the path itself).
std::string hash_of(const std::string& text) {
    std::uint64_t hash = 14695981039346656037ull;
    for (const unsigned char c : text) {
        hash ^= c;
        hash *= 1099511628211ull;
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
    return hex;
}

nlohmann::json to_json(const PublishedVolume& volume) {
    nlohmann::json record = {{"volume_id", volume.volume_id},
                             {"target", volume.target},
                             {"source", volume.source},
                             {"options", volume.options},
                             {"made_target", volume.made_target}};
    return record;
}

std::optional<PublishedVolume> from_json(const nlohmann::json& record) {
    try {
        PublishedVolume volume;
        volume.volume_id = record.at("volume_id").get<std::string>();
        volume.target = record.at("target").get<std::string>();
        volume.source = record.at("source").get<std::string>();
        volume.options = record.at("options").get<std::vector<std::string>>();
        volume.made_target = record.value("made_target", false);
        return volume;
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;  // not a record of ours: as if there were none
    }
}

std::optional<PublishedVolume> read_record(const std::filesystem::path& file) {
    std::ifstream in(file);
    if (!in) return std::nullopt;
    const nlohmann::json record = nlohmann::json::parse(in, nullptr, false);
    if (record.is_discarded()) return std::nullopt;
    return from_json(record);
}

}  // namespace

VolumeStore::VolumeStore(std::filesystem::path folder) : folder_(std::move(folder)) {
    std::error_code error;
    std::filesystem::create_directories(folder_, error);
    if (error || ::chmod(folder_.c_str(), 0700) != 0) {
        throw std::runtime_error("cannot use the state folder " + folder_.string() + ": " +
                                 (error ? error.message() : std::strerror(errno)));
    }
}

std::filesystem::path VolumeStore::file_of(const std::string& target) const {
    return folder_ / (hash_of(target) + ".json");
}

std::optional<PublishedVolume> VolumeStore::find(const std::string& target) const {
    auto volume = read_record(file_of(target));
    if (!volume || volume->target != target) return std::nullopt;
    return volume;
}

void VolumeStore::save(const PublishedVolume& volume) {
    const std::filesystem::path file = file_of(volume.target);
    const std::filesystem::path temporary = file.string() + ".new";
    const std::string text = to_json(volume).dump() + "\n";
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool written = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    written = fd >= 0 && ::fsync(fd) == 0 && written;
    if (fd >= 0) ::close(fd);
    if (!written || ::rename(temporary.c_str(), file.c_str()) != 0) {
        const int error = errno;
        ::unlink(temporary.c_str());
        throw std::runtime_error("cannot write " + file.string() + ": " + std::strerror(error));
    }
}

void VolumeStore::forget(const std::string& target) {
    if (find(target)) ::unlink(file_of(target).c_str());
}

std::vector<PublishedVolume> VolumeStore::all() const {
    std::vector<PublishedVolume> volumes;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(folder_, error)) {
        if (entry.path().extension() != ".json") continue;
        if (auto volume = read_record(entry.path())) volumes.push_back(std::move(*volume));
    }
    return volumes;
}

}  // namespace tensorfs::csi

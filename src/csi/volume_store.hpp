// What the plugin published, kept under --state-dir so that a restarted plugin knows it: one JSON file per target
// (mode 0600 in a 0700 folder), written whole and renamed into place. Secrets are never kept: kubelet sends them
// again with every NodePublishVolume.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tensorfs::csi {

struct PublishedVolume {
    std::string volume_id;
    std::string target;
    std::string source;
    std::vector<std::string> options;  // the volume's mount options, KEY=VALUE, in key order
    bool made_target = false;          // the plugin made the target folder (and removes it at unpublish)
};

class VolumeStore {
public:
    // Creates the folder (and its parents) when missing. Throws std::runtime_error when it cannot.
    explicit VolumeStore(std::filesystem::path folder);

    std::optional<PublishedVolume> find(const std::string& target) const;
    // Throws std::runtime_error when the record cannot be written.
    void save(const PublishedVolume& volume);
    void forget(const std::string& target);
    std::vector<PublishedVolume> all() const;

private:
    std::filesystem::path file_of(const std::string& target) const;

    std::filesystem::path folder_;
};

}  // namespace tensorfs::csi

// A NodePublishVolumeRequest checked as the CSI spec and this driver want it, and turned into what `tensorfs
// mount` takes: the SOURCE, the volume's mount options and its secrets.
#pragma once

#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "csi.pb.h"

namespace tensorfs::csi {

struct PublishRequest {
    std::string volume_id;
    std::string target;                         // absolute, symbolic links of its parent resolved
    std::string source;                         // volume_context["source"]
    std::vector<std::string> options;           // KEY=VALUE for `tensorfs mount -o`, in key order
    // HF_TOKEN, AWS_*, username, password (trailing newlines dropped), and for AWS web identity AWS_ROLE_ARN,
    // AWS_ROLE_SESSION_NAME (volume attributes aws_role_arn, aws_role_session_name) and AWS_WEB_IDENTITY_TOKEN (the
    // pod's service account token, from kubelet's tokenRequests): all that goes to the daemon as its secrets.
    std::map<std::string, std::string> secrets;
};

// The volume_context keys that are mount options (everything else but "source", aws_role_arn,
// aws_role_session_name and csi.storage.k8s.io/* is refused), in the order the README lists them.
const std::vector<std::string>& volume_option_keys();

// OK and `request` filled, or INVALID_ARGUMENT naming what is wrong (never quoting a secret's value). A local SOURCE
// must be under `local_root` (absolute, without symbolic links).
grpc::Status check_publish(const ::csi::v1::NodePublishVolumeRequest& message, const std::filesystem::path& local_root,
                           PublishRequest& request);

}  // namespace tensorfs::csi

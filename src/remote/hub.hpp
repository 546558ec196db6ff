// The Hugging Face Hub's own addressing, as its client libraries use it:
//   hf://ORG/REPO[@REVISION][/PATH]
//   commits   ENDPOINT/api/models/ORG/REPO/revision/REVISION   (JSON: {"sha": COMMIT, ...})
//   files     ENDPOINT/ORG/REPO/resolve/COMMIT/PATH     (the Hub redirects to a CDN host that serves the bytes)
//   listings  ENDPOINT/api/models/ORG/REPO/tree/COMMIT[/PATH][?recursive=true]   (JSON: [{"type", "path",
//             "size"}, ...], in pages linked by the Link header)
// A branch or tag is resolved to its commit once, at the first request, and every listing and file after uses that
// commit, as huggingface_hub pins a download to X-Repo-Commit: a push while a mount is up never mixes two commits'
// files, and `prefetch --verify` checks bytes against the listing of the commit they came from.
// ENDPOINT is $HF_ENDPOINT, default https://huggingface.co. The token is HF_TOKEN given to tensorfs (secrets.hpp:
// a Kubernetes volume's Secret, which may change while it is mounted), else $HF_TOKEN, else the file
// $HF_HOME/token (default ~/.cache/huggingface/token), sent as a bearer token to ENDPOINT's origin only.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "remote_context.hpp"
#include "tensorfs/source_object.hpp"

namespace tensorfs::remote {

struct HubAddress {
    std::string repo;            // "ORG/REPO"
    std::string revision;        // decoded; "main" when not given
    bool revision_given = false;
    std::string path;            // inside the repo, without leading or trailing '/'; may be empty
};

// Throws SourceError naming `source` when it is not of the form above.
HubAddress parse_hub_address(const std::string& source);

std::string hub_endpoint();
std::optional<std::string> hub_token();

class LfsChecksums;
class PinnedCommit;

// A folder of a Hub repo (its root when `address.path` is empty).
class HubFolder : public SourceFolder {
public:
    HubFolder(std::shared_ptr<RemoteContext> context, std::string endpoint, HubAddress address);

    std::string name() const override;
    std::string name_of(const std::string& relative) const override;
    std::shared_ptr<const SourceObject> open_if_exists(const std::string& relative) const override;
    std::vector<std::string> list() const override;
    std::vector<std::string> list_all() const override;
    unsigned parallel_reads() const override;
    std::string missing(const std::string& relative) const override;

private:
    // The files of this folder (`recursive`: with its subfolders'), from the Hub's tree API, page after page.
    std::vector<std::string> listing(bool recursive) const;
    std::string in_repo(const std::string& relative) const;
    // The URL of a file at `revision`: the pinned commit to read it, the revision as given to key its cached blocks.
    std::string url_of(const std::string& relative, const std::string& revision) const;

    std::shared_ptr<RemoteContext> context_;
    std::string endpoint_;
    HubAddress address_;
    std::shared_ptr<PinnedCommit> commit_;
    std::shared_ptr<LfsChecksums> checksums_;  // for the objects it opens, which may outlive it
};

}  // namespace tensorfs::remote

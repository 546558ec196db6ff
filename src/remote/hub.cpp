#include "hub.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "remote_object.hpp"
#include "secrets.hpp"
#include "tensorfs/errors.hpp"
#include "trim_space.hpp"
#include "url.hpp"
#include "url_folder.hpp"

namespace tensorfs::remote {
namespace {

constexpr std::string_view kHubScheme = "hf://";
constexpr std::size_t kMaxHubListingBytes = std::size_t{64} << 20;
constexpr int kMaxHubListingPages = 1000;

bool is_plain_segment(const std::string& segment) {
    return !segment.empty() && segment != "." && segment != "..";
}

// The URL of the next page from a Link header: `<URL>; rel="next"`.
std::string next_page(const std::string& link) {
    for (std::size_t at = 0; (at = link.find('<', at)) != std::string::npos;) {
        const std::size_t close = link.find('>', at);
        if (close == std::string::npos) break;
        const std::size_t end = link.find(',', close);
        const std::string params = link.substr(close, end == std::string::npos ? std::string::npos : end - close);
        if (params.find("rel=\"next\"") != std::string::npos || params.find("rel=next") != std::string::npos) {
            return link.substr(at + 1, close - at - 1);
        }
        at = close;
    }
    return {};
}

}  // namespace

HubAddress parse_hub_address(const std::string& source) {
    const auto bad = [&](const std::string& why) {
        throw_problem(source, why + "; expected hf://ORG/REPO[@REVISION][/PATH]");
    };
    std::string rest = source.substr(kHubScheme.size());
    while (!rest.empty() && rest.back() == '/') rest.pop_back();
    std::vector<std::string> segments;
    for (std::size_t start = 0; start <= rest.size();) {
        std::size_t slash = rest.find('/', start);
        if (slash == std::string::npos) slash = rest.size();
        segments.push_back(rest.substr(start, slash - start));
        start = slash + 1;
    }
    if (segments.size() < 2) bad("no repository named");
    HubAddress address;
    std::string repo = segments[1];
    if (const std::size_t at = repo.find('@'); at != std::string::npos) {
        address.revision = percent_decode(repo.substr(at + 1));
        address.revision_given = true;
        repo.resize(at);
        if (address.revision.empty()) bad("empty revision after '@'");
    } else {
        address.revision = "main";
    }
    if (!is_plain_segment(segments[0]) || !is_plain_segment(repo)) bad("bad organisation or repository name");
    address.repo = segments[0] + "/" + repo;
    for (std::size_t i = 2; i < segments.size(); ++i) {
        if (!is_plain_segment(segments[i])) bad("bad path in the repository");
        address.path += (address.path.empty() ? "" : "/") + segments[i];
    }
    return address;
}

std::string hub_endpoint() {
    const char* endpoint = std::getenv("HF_ENDPOINT");
    std::string text = endpoint != nullptr && *endpoint != '\0' ? endpoint : "https://huggingface.co";
    while (!text.empty() && text.back() == '/') text.pop_back();
    return text;
}

std::optional<std::string> hub_token() {
    // A token given to tensorfs (secrets.hpp) comes first, and may change while a mount runs.
    for (const char* variable : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}) {
        if (const auto token = credential_variable(variable); token && !trim_space(*token).empty()) {
            return std::string(trim_space(*token));
        }
    }
    std::string file;
    if (const char* home = std::getenv("HF_HOME"); home != nullptr && *home != '\0') {
        file = std::string(home) + "/token";
    } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
        file = std::string(xdg) + "/huggingface/token";
    } else if (const char* user_home = std::getenv("HOME"); user_home != nullptr && *user_home != '\0') {
        file = std::string(user_home) + "/.cache/huggingface/token";
    }
    if (file.empty()) return std::nullopt;
    std::ifstream in(file);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    std::string token(trim_space(text.str()));
    if (token.empty()) return std::nullopt;
    return token;
}

namespace {

// The file entries of the Hub's tree listing of `folder` (in the repo), page after page: {"type", "path", "size",
// "oid", and "lfs": {"oid": "<sha256>", "size", "pointerSize"} for a file stored by Git LFS}.
std::vector<nlohmann::json> hub_tree(RemoteContext& context, const std::string& endpoint, const std::string& repo,
                                     const std::string& commit, const std::string& folder, bool recursive,
                                     const std::string& name) {
    std::string url = endpoint + "/api/models/" + percent_encode(repo, "/") + "/tree/" + commit +
                      (folder.empty() ? "" : "/" + percent_encode(folder, "/")) +
                      (recursive ? "?recursive=true" : "");
    std::vector<nlohmann::json> files;
    for (int page = 0; !url.empty(); ++page) {
        if (page == kMaxHubListingPages) {
            throw_problem(name, "the Hub's listing has more than " + std::to_string(page) + " pages");
        }
        Request request;
        request.url = url;
        request.capacity = kMaxHubListingBytes;
        Response response;
        try {
            response = context.http().send(request);
        } catch (const HttpError& error) {
            throw_source_error(error.kind(), name, std::string(error.what()) + " (" + without_credentials(url) + ")");
        }
        const std::string answered = " (" + without_credentials(response.url) + ")";
        if (response.status == 404) {
            throw_missing(name,
                          "no such repository, revision or folder on the Hub: " + response.status_text() + answered);
        }
        if (response.overflow) throw_problem(name, "the Hub's listing is larger than 64 MiB" + answered);
        if (!response.ok()) throw_source_error(kind_of(response), name, context.refusal(response));
        auto listing = nlohmann::json::parse(response.body, nullptr, false);
        if (listing.is_discarded() || !listing.is_array()) {
            throw_problem(name, "the Hub's listing is not a JSON array of entries" + answered);
        }
        for (auto& entry : listing) {
            if (!entry.is_object()) continue;
            const auto type = entry.find("type");  // value() would throw on a type that is not a string
            if (type == entry.end() || !type->is_string() || type->get_ref<const std::string&>() != "file") continue;
            const auto path = entry.find("path");
            if (path == entry.end() || !path->is_string()) continue;
            files.push_back(std::move(entry));
        }
        const std::string next = next_page(response.link);
        url = next.empty() ? std::string() : resolve_url(response.url, next);
    }
    return files;
}

bool is_lowercase_hex(const std::string& text, std::size_t length) {
    return text.size() == length && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

// The commit the revision of `address` names (hub.hpp), asked of the Hub at the first call and kept.
class PinnedCommit {
public:
    PinnedCommit(std::shared_ptr<RemoteContext> context, std::string endpoint, HubAddress address)
        : context_(std::move(context)), endpoint_(std::move(endpoint)), address_(std::move(address)) {
        if (is_lowercase_hex(address_.revision, 40)) commit_ = address_.revision;  // already a commit
    }

    // Throws SourceError naming `name` (what was asked for) when the Hub does not tell the commit.
    std::string get(const std::string& name) {
        const std::lock_guard lock(mutex_);
        if (commit_.empty()) commit_ = ask(name);
        return commit_;
    }

private:
    std::string ask(const std::string& name) const {
        Request request;
        request.url = endpoint_ + "/api/models/" + percent_encode(address_.repo, "/") + "/revision/" +
                      percent_encode(address_.revision);
        request.capacity = kMaxHubListingBytes;
        Response response;
        try {
            response = context_->http().send(request);
        } catch (const HttpError& error) {
            throw_source_error(error.kind(), name,
                               std::string(error.what()) + " (" + without_credentials(request.url) + ")");
        }
        const std::string answered = " (" + without_credentials(response.url) + ")";
        if (response.status == 404) {
            throw_missing(name, "no such repository or revision on the Hub: " + response.status_text() + answered);
        }
        if (response.overflow) {
            throw_problem(name, "the Hub's answer about the revision is larger than 64 MiB" + answered);
        }
        if (!response.ok()) throw_source_error(kind_of(response), name, context_->refusal(response));
        const auto info = nlohmann::json::parse(response.body, nullptr, false);
        const auto sha = info.is_object() ? info.find("sha") : info.end();
        if (sha == info.end() || !sha->is_string() || !is_lowercase_hex(sha->get_ref<const std::string&>(), 40)) {
            throw_problem(name,
                          "the Hub's answer about revision '" + address_.revision + "' names no commit" + answered);
        }
        return sha->get<std::string>();
    }

    const std::shared_ptr<RemoteContext> context_;
    const std::string endpoint_;
    const HubAddress address_;
    std::mutex mutex_;
    std::string commit_;
};

// The LFS sha256 of the repo's files, from the Hub's listing of their folder: asked once per folder, and only when
// `prefetch --verify` wants one (a mount never lists for it). Files not stored by LFS (small text files) have none.
class LfsChecksums {
public:
    LfsChecksums(std::shared_ptr<RemoteContext> context, std::string endpoint, std::string repo,
                 std::shared_ptr<PinnedCommit> commit, std::string name)
        : context_(std::move(context)), endpoint_(std::move(endpoint)), repo_(std::move(repo)),
          commit_(std::move(commit)), name_(std::move(name)) {}

    std::optional<PublishedChecksum> of(const std::string& path) {
        const std::size_t slash = path.rfind('/');
        const std::string folder = slash == std::string::npos ? std::string() : path.substr(0, slash);
        const std::lock_guard lock(mutex_);
        auto listed = folders_.find(folder);
        if (listed == folders_.end()) {
            std::map<std::string, std::string> oids;
            const std::string commit = commit_->get(name_);
            for (const auto& entry : hub_tree(*context_, endpoint_, repo_, commit, folder, false, name_)) {
                const auto lfs = entry.find("lfs");
                if (lfs == entry.end() || !lfs->is_object() || !lfs->contains("oid") || !(*lfs)["oid"].is_string()) {
                    continue;
                }
                const std::string& oid = (*lfs)["oid"].get_ref<const std::string&>();
                if (is_lowercase_hex(oid, 64)) oids[entry["path"].get<std::string>()] = oid;
            }
            listed = folders_.emplace(folder, std::move(oids)).first;
        }
        const auto found = listed->second.find(path);
        if (found == listed->second.end()) return std::nullopt;
        return PublishedChecksum{Digest::Kind::Sha256, found->second, "the Hub's LFS sha256"};
    }

private:
    std::shared_ptr<RemoteContext> context_;
    const std::string endpoint_;
    const std::string repo_;
    const std::shared_ptr<PinnedCommit> commit_;
    const std::string name_;
    std::mutex mutex_;
    std::map<std::string, std::map<std::string, std::string>> folders_;  // folder -> path -> sha256
};

HubFolder::HubFolder(std::shared_ptr<RemoteContext> context, std::string endpoint, HubAddress address)
    : context_(std::move(context)), endpoint_(std::move(endpoint)), address_(std::move(address)),
      commit_(std::make_shared<PinnedCommit>(context_, endpoint_, address_)),
      checksums_(std::make_shared<LfsChecksums>(context_, endpoint_, address_.repo, commit_, name())) {}

std::string HubFolder::name() const {
    std::string text = std::string(kHubScheme) + address_.repo;
    if (address_.revision_given) text += "@" + percent_encode(address_.revision);
    if (!address_.path.empty()) text += "/" + address_.path;
    return text;
}

std::string HubFolder::in_repo(const std::string& relative) const {
    return address_.path.empty() ? relative : address_.path + "/" + relative;
}

std::string HubFolder::name_of(const std::string& relative) const { return name() + "/" + relative; }

std::string HubFolder::url_of(const std::string& relative, const std::string& revision) const {
    return endpoint_ + "/" + percent_encode(address_.repo, "/") + "/resolve/" + percent_encode(revision) + "/" +
           percent_encode(in_repo(relative), "/");
}

std::shared_ptr<const SourceObject> HubFolder::open_if_exists(const std::string& relative) const {
    const std::string name = name_of(relative);
    auto object = RemoteObject::open(context_, name, url_of(relative, commit_->get(name)));
    if (object) {
        // Cached under the revision as given, with the file's ETag (its content's hash on the Hub): a push that
        // leaves a file alone leaves its cached blocks in use.
        object->set_cache_address(url_of(relative, address_.revision));
        object->set_checksum_lookup([checksums = checksums_, path = in_repo(relative)](const RemoteObject& file) {
            try {
                return checksums->of(path);
            } catch (const SourceError& error) {
                // The listing's problem (what() already reads "tensorfs: FOLDER: ..."), said of the file checked.
                const auto& problems = error.problems();
                throw IoError(file.name(), problems.empty() ? "cannot list its folder" : problems.front().what,
                              error.kind());
            }
        });
    }
    return object;
}

std::vector<std::string> HubFolder::list() const { return listing(false); }

std::vector<std::string> HubFolder::list_all() const { return listing(true); }

std::vector<std::string> HubFolder::listing(bool recursive) const {
    std::vector<std::string> names;
    const std::string prefix = address_.path.empty() ? "" : address_.path + "/";
    const std::string commit = commit_->get(name());
    for (const auto& entry : hub_tree(*context_, endpoint_, address_.repo, commit, address_.path, recursive, name())) {
        const std::string& text = entry["path"].get_ref<const std::string&>();
        if (!text.starts_with(prefix) || text.size() == prefix.size()) continue;
        // Without `recursive`, only the files directly in this folder, as a local folder's listing gives them.
        if (!recursive && text.find('/', prefix.size()) != std::string::npos) continue;
        names.push_back(text.substr(prefix.size()));
    }
    std::sort(names.begin(), names.end());
    return names;
}

unsigned HubFolder::parallel_reads() const { return kRemoteParallelReads; }

std::string HubFolder::missing(const std::string& relative) const {
    const std::string url = url_of(relative, commit_->get(name_of(relative)));  // pinned by the open that failed
    return "not found on the Hub (HTTP 404 from " + without_credentials(url) + ")";
}

}  // namespace tensorfs::remote

// Which folder a remote SOURCE names, and the context (client, credentials, disk cache) its files share.
#include "tensorfs/remote_source.hpp"

#include "remote/hub.hpp"
#include "remote/remote_context.hpp"
#include "remote/s3.hpp"
#include "remote/secrets.hpp"
#include "remote/url.hpp"
#include "remote/url_folder.hpp"
#include "tensorfs/errors.hpp"

namespace tensorfs {
namespace {

// What to do when the server refuses the request's credentials (or their absence), in the terms of where they
// come from: a Kubernetes volume's Secret, or the environment and files of the user.
std::string credentials_hint(bool hub, bool token) {
    if (!remote::kubernetes_volume().empty()) {
        const std::string applied = " (kubelet gives the running volume the Secret's new values within a minute)";
        if (hub) {
            return token ? "the Hub refused the token from the volume's Secret (nodePublishSecretRef): put a token "
                           "that may read this repository in its HF_TOKEN key" + applied
                         : "the Hub wants a token for it: put one that may read this repository in the HF_TOKEN key "
                           "of a Secret, and name that Secret in the volume's nodePublishSecretRef";
        }
        return remote::given_secret("username") || remote::given_secret("password")
                   ? "the server refused the username and password from the volume's Secret "
                     "(nodePublishSecretRef): update them there" + applied
                   : "the server wants credentials: put username and password in a Secret, and name that Secret in "
                     "the volume's nodePublishSecretRef";
    }
    if (hub) {
        return token ? "the Hub refused the token (from HF_TOKEN or the token file); set HF_TOKEN to a token that "
                       "may read this repository"
                     : "the Hub wants a token for it; set HF_TOKEN to a token that may read this repository";
    }
    return "the server wants credentials (put them in ~/.netrc for its host)";
}

std::shared_ptr<remote::RemoteContext> context_for(const std::string& source, const SourceOptions& options) {
    const std::string endpoint = remote::hub_endpoint();
    const bool hub = source.starts_with("hf://") || remote::origin_of(source) == remote::origin_of(endpoint);
    // Made again whenever new secrets are given (a republish of a Kubernetes volume): the next request uses them.
    auto credentials = remote::credentials_from_secrets(
        [hub_origin = remote::origin_of(endpoint), source_origin = hub ? "" : remote::origin_of(source)] {
            std::vector<remote::Credentials> list;
            if (const auto token = remote::hub_token()) list.push_back({hub_origin, "Bearer " + *token, std::nullopt});
            const auto user = remote::given_secret("username");
            const auto password = remote::given_secret("password");
            if (!source_origin.empty() && (user || password)) {
                list.push_back({source_origin, remote::basic_authorization(user.value_or(""), password.value_or("")),
                                std::nullopt});
            }
            return list;
        });
    auto explain = [hub](const remote::Response& response) {
        std::string text = response.status_text() + " (" + remote::without_credentials(response.url) + ")";
        if (response.status == 401 || response.status == 403) {
            text += ": " + credentials_hint(hub, remote::hub_token().has_value());
        }
        return text;
    };
    return std::make_shared<remote::RemoteContext>(options, std::move(credentials), std::move(explain));
}

}  // namespace

bool is_remote_source(const std::string& source) {
    return source.starts_with("http://") || source.starts_with("https://") || source.starts_with("hf://") ||
           source.starts_with("s3://");
}

std::string shown_source(const std::string& source) {
    return is_remote_source(source) ? remote::without_credentials(source) : source;
}

SourceLocation resolve_remote(const std::string& source, const SourceOptions& options) {
    if (source.starts_with("s3://")) return remote::resolve_s3(source, options);
    if (source.starts_with("hf://")) {
        remote::HubAddress address = remote::parse_hub_address(source);
        std::string file;
        if (remote::names_a_file(address.path)) {
            const std::size_t slash = address.path.rfind('/');
            file = slash == std::string::npos ? address.path : address.path.substr(slash + 1);
            address.path = slash == std::string::npos ? std::string() : address.path.substr(0, slash);
        }
        auto context = context_for(source, options);
        return {std::make_unique<remote::HubFolder>(std::move(context), remote::hub_endpoint(), std::move(address)),
                std::move(file)};
    }
    if (remote::origin_of(source).empty()) {
        Problems problems;
        problems.add(source, "not a URL that can be read");
        problems.throw_if_any();
    }
    // The folder is the URL up to its last '/' (before any query); the file, the rest, decoded as the parsers
    // name files (split parts are found by their decoded names, shards by the index's).
    const std::size_t query_at = source.find_first_of("?#");
    const std::string path_part = source.substr(0, query_at);
    std::string query = query_at == std::string::npos ? std::string() : source.substr(query_at);
    if (query.starts_with("#")) query.clear();
    const std::size_t slash = path_part.rfind('/');
    std::string base = path_part.substr(0, slash + 1);
    std::string file = remote::percent_decode(path_part.substr(slash + 1));
    auto context = context_for(source, options);
    return {std::make_unique<remote::UrlFolder>(std::move(context), std::move(base), std::move(query)),
            std::move(file)};
}

}  // namespace tensorfs

// Which folder a remote SOURCE names, and the context (client, credentials, disk cache) its files share.
#include "tensorfs/remote_source.hpp"

#include "remote/hub.hpp"
#include "remote/remote_context.hpp"
#include "remote/s3.hpp"
#include "remote/url.hpp"
#include "remote/url_folder.hpp"
#include "tensorfs/errors.hpp"

namespace tensorfs {
namespace {

std::shared_ptr<remote::RemoteContext> context_for(const std::string& source, const SourceOptions& options) {
    const std::string endpoint = remote::hub_endpoint();
    const auto token = remote::hub_token();
    std::vector<remote::Credentials> credentials;
    if (token) credentials.push_back({remote::origin_of(endpoint), "Bearer " + *token, std::nullopt});
    const bool hub = source.starts_with("hf://") || remote::origin_of(source) == remote::origin_of(endpoint);
    std::string hint;
    if (hub) {
        hint = token ? "the Hub refused the token (from HF_TOKEN or the token file); set HF_TOKEN to a token "
                       "that may read this repository"
                     : "the Hub wants a token for it; set HF_TOKEN to a token that may read this repository";
    } else {
        hint = "the server wants credentials (put them in ~/.netrc for its host)";
    }
    auto explain = [hint](const remote::Response& response) {
        std::string text = response.status_text() + " (" + remote::without_credentials(response.url) + ")";
        if (response.status == 401 || response.status == 403) text += ": " + hint;
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

ResolvedSource resolve_remote(const std::string& source, const SourceOptions& options) {
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

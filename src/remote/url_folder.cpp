#include "url_folder.hpp"

#include "remote_object.hpp"
#include "tensorfs/errors.hpp"
#include "url.hpp"

namespace tensorfs::remote {

UrlFolder::UrlFolder(std::shared_ptr<RemoteContext> context, std::string base, std::string query)
    : context_(std::move(context)), base_(std::move(base)), query_(std::move(query)) {}

std::string UrlFolder::name() const { return without_credentials(base_); }

std::string UrlFolder::url_of(const std::string& relative) const {
    return base_ + percent_encode(relative, "/") + query_;
}

std::string UrlFolder::name_of(const std::string& relative) const { return without_credentials(url_of(relative)); }

std::shared_ptr<const SourceObject> UrlFolder::open_if_exists(const std::string& relative) const {
    return RemoteObject::open(context_, name_of(relative), url_of(relative));
}

std::vector<std::string> UrlFolder::list() const {
    Problems problems;
    problems.add(name(), "a web server gives no listing of a folder: name the file to mount (a .safetensors, "
                         ".safetensors.index.json, .gguf, .bin, .pt, .pth or .bin.index.json URL), or use an hf:// "
                         "address for a Hub repo");
    problems.throw_if_any();
    return {};
}

std::vector<std::string> UrlFolder::list_all() const { return list(); }

unsigned UrlFolder::parallel_reads() const { return kRemoteParallelReads; }

std::string UrlFolder::missing(const std::string&) const { return "not found on the server (HTTP 404)"; }

}  // namespace tensorfs::remote

#include "secrets.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include <openssl/evp.h>

#include <nlohmann/json.hpp>

namespace tensorfs::remote {
namespace {

std::mutex secrets_mutex;
std::map<std::string, std::string> given;  // guarded by secrets_mutex
bool any_given = false;                    // guarded by secrets_mutex
std::atomic<std::uint64_t> generation{0};
std::string volume_id;                     // guarded by secrets_mutex

bool is_secret_name(std::string_view name) {
    const auto& names = secret_names();
    return std::find(names.begin(), names.end(), name) != names.end();
}

bool has_control_characters(const std::string& text) {
    return std::any_of(text.begin(), text.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

}  // namespace

const std::vector<std::string_view>& secret_names() {
    static const std::vector<std::string_view> names = {
        "HF_TOKEN",     "AWS_ACCESS_KEY_ID",     "AWS_SECRET_ACCESS_KEY",  "AWS_SESSION_TOKEN",
        "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME", "AWS_WEB_IDENTITY_TOKEN", "username",
        "password"};
    return names;
}

std::string parse_secrets(std::string_view text, std::map<std::string, std::string>& secrets) {
    const nlohmann::json document = nlohmann::json::parse(text, nullptr, false);
    if (!document.is_object()) return "expected one JSON object of strings";
    std::map<std::string, std::string> parsed;
    for (const auto& [name, value] : document.items()) {
        if (!is_secret_name(name)) {
            std::string known;
            for (const auto known_name : secret_names()) known += (known.empty() ? "" : ", ") + std::string(known_name);
            return "unknown secret '" + name + "' (" + known + ")";
        }
        if (!value.is_string()) return "'" + name + "' is not a string";
        std::string text_value = value.get<std::string>();
        if (has_control_characters(text_value)) return "the value of '" + name + "' holds a control character";
        parsed[name] = std::move(text_value);
    }
    secrets = std::move(parsed);
    return {};
}

std::vector<std::string> give_secrets(std::map<std::string, std::string> secrets) {
    std::vector<std::string> changed;
    const std::lock_guard lock(secrets_mutex);
    for (const auto& [name, value] : secrets) {
        const auto before = given.find(name);
        if (before == given.end() || before->second != value) changed.push_back(name);
    }
    for (const auto& [name, value] : given) {
        if (secrets.count(name) == 0) changed.push_back(name);
    }
    std::sort(changed.begin(), changed.end());
    if (!changed.empty() || !any_given) {
        given = std::move(secrets);
        any_given = true;
        generation.fetch_add(1);
    }
    return changed;
}

bool secrets_given() {
    const std::lock_guard lock(secrets_mutex);
    return any_given;
}

std::uint64_t secrets_generation() { return generation.load(); }

bool is_given(const std::string& name) {
    const std::lock_guard lock(secrets_mutex);
    const auto found = given.find(name);
    return found != given.end() && !found->second.empty();
}

std::optional<std::string> given_secret(const std::string& name) {
    const std::lock_guard lock(secrets_mutex);
    const auto found = given.find(name);
    if (found == given.end()) return std::nullopt;
    return found->second;
}

std::string basic_authorization(const std::string& user, const std::string& password) {
    const std::string pair = user + ":" + password;
    std::string encoded(4 * ((pair.size() + 2) / 3) + 1, '\0');
    const int length =
        EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                        reinterpret_cast<const unsigned char*>(pair.data()), static_cast<int>(pair.size()));
    encoded.resize(static_cast<std::size_t>(std::max(length, 0)));
    return "Basic " + encoded;
}

std::optional<std::string> credential_variable(const std::string& name) {
    // Given only: no variable of the environment stands for them.
    if (name == "username" || name == "password" || name == "AWS_WEB_IDENTITY_TOKEN") {
        auto value = given_secret(name);
        if (value && value->empty()) return std::nullopt;
        return value;
    }
    {
        const std::lock_guard lock(secrets_mutex);
        if (const auto found = given.find(name); found != given.end()) {
            if (found->second.empty()) return std::nullopt;
            return found->second;
        }
        // Keys given are the whole pair: a session token from the environment belongs to other keys.
        const bool token = name == "AWS_SESSION_TOKEN" || name == "AWS_SECURITY_TOKEN";
        if (token && given.count("AWS_ACCESS_KEY_ID") != 0) return std::nullopt;
        // A token given takes the place of a token file of the environment.
        if (name == "AWS_WEB_IDENTITY_TOKEN_FILE" && given.count("AWS_WEB_IDENTITY_TOKEN") != 0) return std::nullopt;
    }
    // The environment is read, never written, once threads run (take_secrets no longer sets variables).
    const char* value = std::getenv(name.c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
}

void set_kubernetes_volume(std::string id) {
    const std::lock_guard lock(secrets_mutex);
    volume_id = std::move(id);
}

std::string kubernetes_volume() {
    const std::lock_guard lock(secrets_mutex);
    return volume_id;
}

std::string given_secrets_place() {
    return kubernetes_volume().empty() ? "the secrets given to tensorfs (--secrets-fd)"
                                       : "the volume's Secret (nodePublishSecretRef)";
}

}  // namespace tensorfs::remote

// Credentials handed to this process, rather than read from its environment: by the program that starts it
// (`tensorfs mount --secrets-fd N`: the Kubernetes plugin, with a volume's Secret) and again while it runs (the
// plugin's republish, through the daemon's secrets socket: mount option secrets_socket=). They are kept in memory
// only (never in the environment, whose first block /proc/PID/environ shows, nor in a file), and they can be
// replaced at any time, from any thread: the remote layer asks for them before each request (credential sources,
// http_client.hpp), so that the next request uses new ones.
//
// A given value takes the place of the environment variable of the same name; a name not given falls back to the
// environment, except that AWS keys given without a session token come without one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tensorfs::remote {

// The names that may be given:
//   HF_TOKEN                                          the Hub's token
//   AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
//   AWS_SESSION_TOKEN                                 AWS keys
//   AWS_ROLE_ARN, AWS_ROLE_SESSION_NAME               AWS web identity: the role to assume, the session's name
//   AWS_WEB_IDENTITY_TOKEN                            the web identity token itself (instead of
//                                                     AWS_WEB_IDENTITY_TOKEN_FILE): a Kubernetes pod's service
//                                                     account token (the CSI driver's tokenRequests)
//   username, password                                an http(s):// SOURCE's (HTTP basic authentication)
const std::vector<std::string_view>& secret_names();

// Reads one JSON object of strings whose names are secret_names(). Returns an error message for a user (never
// quoting a value), or "" with `secrets` filled. Values must not hold control characters (they go into headers).
std::string parse_secrets(std::string_view text, std::map<std::string, std::string>& secrets);

// Makes `secrets` the given set, replacing the one before (a name it lacks is no longer given). Returns the names
// whose value changed, was added or was removed (empty: nothing changed).
std::vector<std::string> give_secrets(std::map<std::string, std::string> secrets);

// Whether secrets were given at all.
bool secrets_given();

// How many times the given set changed: credential sources make their credentials again when it moves.
std::uint64_t secrets_generation();

// The value of credential variable `name` as the rules above say (a given value, else the environment's); any
// other variable from the environment. An empty value counts as unset.
std::optional<std::string> credential_variable(const std::string& name);

// Whether `name` has a given value (rather than one from the environment or none).
bool is_given(const std::string& name);

// The value given for `name`, never the environment's (username, password: no variable of the environment is
// taken for them); nullopt when none was given.
std::optional<std::string> given_secret(const std::string& name);

// The value of an Authorization header of HTTP basic authentication: "Basic " and base64 of USER:PASSWORD.
std::string basic_authorization(const std::string& user, const std::string& password);

// This process serves Kubernetes volume `id` (mount option csi_volume=ID, set by the CSI plugin): messages about
// credentials say what to do in Kubernetes terms (the volume's Secret, its attributes, the CSIDriver).
void set_kubernetes_volume(std::string id);
// The volume's id; empty when the process serves none.
std::string kubernetes_volume();

// How messages name where given secrets came from: "the volume's Secret (nodePublishSecretRef)" for a Kubernetes
// volume, else "the secrets given to tensorfs (--secrets-fd)".
std::string given_secrets_place();

}  // namespace tensorfs::remote

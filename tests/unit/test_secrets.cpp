// Secrets given to a process (--secrets-fd, a daemon's secrets socket): what is taken, what a new set changes, and
// how given values stand for the environment's.
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "remote/http_client.hpp"
#include "remote/secrets.hpp"

namespace tensorfs::remote {
namespace {

// Gives the empty set at the end of a test: names fall back to the environment again.
struct GivenSecrets {
    ~GivenSecrets() { give_secrets({}); }
};

// A server on 127.0.0.1 that answers each request (one per connection) 200 when its Authorization header is
// `wanted`, else 401, and keeps the headers it got, in order.
class TokenServer {
public:
    explicit TokenServer(std::string wanted) : wanted_(std::move(wanted)) {
        listening_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof address;
        BOOST_REQUIRE(::bind(listening_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
        BOOST_REQUIRE(::getsockname(listening_, reinterpret_cast<sockaddr*>(&address), &length) == 0);
        BOOST_REQUIRE(::listen(listening_, 4) == 0);
        port_ = ntohs(address.sin_port);
        thread_ = std::thread([this] {
            for (;;) {
                const int connection = ::accept4(listening_, nullptr, nullptr, SOCK_CLOEXEC);
                if (connection < 0) return;
                std::string request;
                char buffer[4096];
                while (request.find("\r\n\r\n") == std::string::npos) {
                    const ssize_t got = ::read(connection, buffer, sizeof buffer);
                    if (got <= 0) break;
                    request.append(buffer, static_cast<std::size_t>(got));
                }
                const std::size_t at = request.find("Authorization: ");
                const std::string given =
                    at == std::string::npos ? "" : request.substr(at + 15, request.find("\r\n", at) - at - 15);
                {
                    const std::lock_guard lock(mutex_);
                    seen_.push_back(given);
                }
                const std::string answer = given == wanted_
                                               ? "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
                                               : "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n"
                                                 "Connection: close\r\n\r\n";
                const ssize_t wrote = ::write(connection, answer.data(), answer.size());
                static_cast<void>(wrote);
                ::close(connection);
            }
        });
    }
    ~TokenServer() {
        ::shutdown(listening_, SHUT_RDWR);
        thread_.join();
        ::close(listening_);
    }
    std::string origin() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::vector<std::string> seen() {
        const std::lock_guard lock(mutex_);
        return seen_;
    }

private:
    const std::string wanted_;
    int listening_ = -1;
    unsigned port_ = 0;
    std::thread thread_;
    std::mutex mutex_;
    std::vector<std::string> seen_;
};

// Credentials that change (a new Secret given) while the first request that carries them is under way.
class RotatedWhileSent : public CredentialSource {
public:
    explicit RotatedWhileSent(std::string origin) : origin_(std::move(origin)) {}
    Current current(std::chrono::steady_clock::time_point) override {
        const int calls = calls_.fetch_add(1);
        return {{{origin_, calls == 0 ? "Bearer old" : "Bearer new", std::nullopt}}, calls == 0 ? 1u : 2u};
    }
    std::uint64_t version() const override { return 2; }

private:
    const std::string origin_;
    std::atomic<int> calls_{0};
};

}  // namespace

BOOST_AUTO_TEST_SUITE(secrets)

BOOST_AUTO_TEST_CASE(a_request_refused_while_its_credentials_changed_is_sent_again_with_the_new_ones) {
    TokenServer server("Bearer new");
    RemoteCounters counters;
    HttpClient client(counters, std::make_shared<RotatedWhileSent>(server.origin()), std::chrono::seconds(20));
    Request request;
    request.url = server.origin() + "/file";
    request.capacity = 16;
    const Response response = client.send(request);
    BOOST_TEST(response.status == 200);
    BOOST_TEST(server.seen() == (std::vector<std::string>{"Bearer old", "Bearer new"}),
               boost::test_tools::per_element());
    // Credentials that do not change are not sent again: a refusal is the answer.
    TokenServer refusing("Bearer other");
    HttpClient fixed(counters, fixed_credentials({{refusing.origin(), "Bearer new", std::nullopt}}),
                     std::chrono::seconds(20));
    request.url = refusing.origin() + "/file";
    BOOST_TEST(fixed.send(request).status == 401);
    BOOST_TEST(refusing.seen().size() == 1u);
}


BOOST_AUTO_TEST_CASE(a_json_object_of_known_names_and_plain_values) {
    std::map<std::string, std::string> secrets;
    BOOST_TEST(parse_secrets(R"({"HF_TOKEN": "hf_x", "AWS_WEB_IDENTITY_TOKEN": "eyJ"})", secrets).empty());
    BOOST_TEST(secrets.size() == 2u);
    BOOST_TEST(parse_secrets("[]", secrets) == "expected one JSON object of strings");
    BOOST_TEST(parse_secrets(R"({"HF_TOKEN": 5})", secrets) == "'HF_TOKEN' is not a string");
    BOOST_TEST(parse_secrets(R"({"HF_TOKEN": "a\nb"})", secrets) ==
               "the value of 'HF_TOKEN' holds a control character");
    const std::string unknown = parse_secrets(R"({"GITHUB_TOKEN": "ghp_secret"})", secrets);
    BOOST_TEST(unknown.starts_with("unknown secret 'GITHUB_TOKEN' (HF_TOKEN, "));
    BOOST_TEST(unknown.find("ghp_secret") == std::string::npos);
    BOOST_TEST(secrets.size() == 2u);  // a refused document changes nothing
}

BOOST_AUTO_TEST_CASE(a_new_set_replaces_the_old_and_says_what_changed_by_name) {
    const GivenSecrets restore;
    give_secrets({{"HF_TOKEN", "one"}, {"username", "u"}});
    const std::uint64_t before = secrets_generation();
    BOOST_TEST(give_secrets({{"HF_TOKEN", "one"}, {"username", "u"}}).empty());
    BOOST_TEST(secrets_generation() == before);
    const auto changed = give_secrets({{"HF_TOKEN", "two"}, {"password", "p"}});
    BOOST_TEST(changed == (std::vector<std::string>{"HF_TOKEN", "password", "username"}),
               boost::test_tools::per_element());
    BOOST_TEST(secrets_generation() == before + 1);
    BOOST_TEST(*credential_variable("HF_TOKEN") == "two");
    BOOST_TEST(!credential_variable("username"));
    BOOST_TEST(secrets_given());
}

BOOST_AUTO_TEST_CASE(given_values_stand_for_the_environments) {
    const GivenSecrets restore;
    ::setenv("AWS_SESSION_TOKEN", "from-the-environment", 1);
    ::setenv("password", "not-a-secret-of-ours", 1);
    give_secrets({});
    BOOST_TEST(*credential_variable("AWS_SESSION_TOKEN") == "from-the-environment");
    BOOST_TEST(!credential_variable("password"));  // given only, never the environment's
    // Keys given without a token come without one: the environment's belongs to other keys.
    give_secrets({{"AWS_ACCESS_KEY_ID", "A"}, {"AWS_SECRET_ACCESS_KEY", "S"}});
    BOOST_TEST(!credential_variable("AWS_SESSION_TOKEN"));
    BOOST_TEST(is_given("AWS_ACCESS_KEY_ID"));
    give_secrets({{"AWS_WEB_IDENTITY_TOKEN", "eyJ"}});
    ::setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/token", 1);
    BOOST_TEST(!credential_variable("AWS_WEB_IDENTITY_TOKEN_FILE"));  // the token given takes its place
    ::unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
    ::unsetenv("AWS_SESSION_TOKEN");
    ::unsetenv("password");
}

BOOST_AUTO_TEST_CASE(basic_authorization_and_where_given_secrets_come_from) {
    BOOST_TEST(basic_authorization("Aladdin", "open sesame") == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
    BOOST_TEST(given_secrets_place() == "the secrets given to tensorfs (--secrets-fd)");
    set_kubernetes_volume("vol-1");
    BOOST_TEST(given_secrets_place() == "the volume's Secret (nodePublishSecretRef)");
    set_kubernetes_volume("");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace tensorfs::remote

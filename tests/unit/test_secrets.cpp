// Secrets given to a process (--secrets-fd, a daemon's secrets socket): what is taken, what a new set changes, and
// how given values stand for the environment's.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <map>
#include <string>

#include "remote/secrets.hpp"

namespace tensorfs::remote {
namespace {

// Gives the empty set at the end of a test: names fall back to the environment again.
struct GivenSecrets {
    ~GivenSecrets() { give_secrets({}); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(secrets)

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

// Parts of the S3 support that need no server: the XML reader, ListObjectsV2 pages, AWS settings from the
// environment and the shared files, s3:// addresses and the URLs (in SigV4's canonical form) they lead to.
#include <boost/test/unit_test.hpp>

#include <map>
#include <optional>
#include <string>

#include "remote/aws_config.hpp"
#include "remote/aws_credentials.hpp"
#include "remote/http_client.hpp"
#include "remote/s3.hpp"
#include "remote/s3_checksum.hpp"
#include "remote/url.hpp"
#include "remote/xml.hpp"
#include "temp_folder.hpp"
#include "tensorfs/errors.hpp"
#include "vectors.hpp"

namespace tensorfs::remote {

BOOST_AUTO_TEST_SUITE(s3_parts)

BOOST_AUTO_TEST_CASE(xml_elements_text_and_references) {
    const XmlElement root = parse_xml(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- a comment -->"
        "<s3:Error xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Code>NoSuchKey</Code>"
        "<Message>a &lt;b&gt; &amp; &quot;c&quot; &apos;d&apos; &#233;&#x20AC;</Message><Empty/>"
        "<Raw><![CDATA[<not> &parsed;]]></Raw></s3:Error>  ");
    BOOST_TEST(root.name == "Error");
    BOOST_TEST(root.child_text("Code").value() == "NoSuchKey");
    BOOST_TEST(root.child_text("Message").value() == "a <b> & \"c\" 'd' \xC3\xA9\xE2\x82\xAC");
    BOOST_TEST(root.child_text("Empty").value().empty());
    BOOST_TEST(root.child_text("Raw").value() == "<not> &parsed;");
    BOOST_TEST(!root.child_text("Absent"));
}

BOOST_AUTO_TEST_CASE(xml_that_is_not_well_formed_or_too_deep_is_refused) {
    for (const char* text : {"", "text", "<a>", "<a></b>", "<a><b></a></b>", "<a>&unknown;</a>", "<a>&#0;</a>",
                             "<a>&#xD800;</a>", "<a>&amp</a>", "<a></a><b></b>", "<!DOCTYPE a><a/>", "<a x=\"1></a>",
                             "<a><!-- open</a>", "<a><![CDATA[open</a>"}) {
        BOOST_CHECK_THROW(parse_xml(text), XmlError);
    }
    std::string deep;
    for (int i = 0; i < 40; ++i) deep += "<a>";
    for (int i = 0; i < 40; ++i) deep += "</a>";
    BOOST_CHECK_THROW(parse_xml(deep), XmlError);
    std::string wide = "<a>";
    for (int i = 0; i < 100'000; ++i) wide += "<b/>";
    BOOST_CHECK_THROW(parse_xml(wide + "</a>"), XmlError);
}

BOOST_AUTO_TEST_CASE(listing_pages) {
    const S3ListingPage first = read_listing_page(
        "<ListBucketResult><Name>b</Name><Prefix>m/</Prefix><KeyCount>2</KeyCount><IsTruncated>true</IsTruncated>"
        "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
        "<Contents><Key>m/a &amp; b.safetensors</Key><Size>10</Size></Contents>"
        "<Contents><Key>m/c.gguf</Key></Contents><CommonPrefixes><Prefix>m/sub/</Prefix></CommonPrefixes>"
        "</ListBucketResult>");
    BOOST_TEST(first.keys == (std::vector<std::string>{"m/a & b.safetensors", "m/c.gguf"}),
               boost::test_tools::per_element());
    BOOST_TEST(first.next_continuation == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");

    const S3ListingPage last = read_listing_page(
        "<ListBucketResult><IsTruncated>false</IsTruncated><NextContinuationToken>x</NextContinuationToken>"
        "</ListBucketResult>");
    BOOST_TEST(last.keys.empty());
    BOOST_TEST(last.next_continuation.empty());

    BOOST_CHECK_THROW(read_listing_page("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>"),
                      std::runtime_error);
    BOOST_CHECK_THROW(read_listing_page("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>"),
                      std::runtime_error);
    BOOST_CHECK_THROW(read_listing_page("<Error><Code>AccessDenied</Code></Error>"), std::runtime_error);
    BOOST_CHECK_THROW(read_listing_page("[{\"not\": \"xml\"}]"), std::runtime_error);
}

// The answers in tests/data/s3 (also the seeds of the fuzz target fuzz_s3_answer), as S3 writes them.
std::string s3_answer(const std::string& name) {
    const auto bytes = test::read_bytes(test::data_path("s3/" + name));
    return std::string(bytes.begin(), bytes.end());
}

BOOST_AUTO_TEST_CASE(answers_as_s3_writes_them) {
    const S3ListingPage first = read_listing_page(s3_answer("list-objects-v2-truncated.xml"));
    BOOST_TEST(first.keys == (std::vector<std::string>{"llama/model-00001-of-00002.safetensors",
                                                       "llama/model-00002-of-00002.safetensors"}),
               boost::test_tools::per_element());
    BOOST_TEST(first.next_continuation == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
    const S3ListingPage last = read_listing_page(s3_answer("list-objects-v2-last-page.xml"));
    BOOST_TEST(last.keys == (std::vector<std::string>{"llama/model.safetensors.index.json", "llama/a & b.gguf"}),
               boost::test_tools::per_element());
    BOOST_TEST(last.next_continuation.empty());
    const XmlElement error = parse_xml(s3_answer("error-wrong-region.xml"));
    BOOST_TEST(error.child_text("Code").value() == "AuthorizationHeaderMalformed");
    BOOST_TEST(error.child_text("Region").value() == "eu-west-3");
    BOOST_TEST(parse_xml(s3_answer("error-access-denied.xml")).child_text("HostId").value() == "\xE4\xB8\x80\xC3\xA9");
}

BOOST_AUTO_TEST_CASE(s3_error_codes_lead_the_status_text) {
    Response response;
    response.status = 404;
    BOOST_TEST(response.status_text() == "HTTP 404 Not Found");
    response.error_code = "NoSuchBucket";
    response.error_message = "The specified bucket does not exist";
    BOOST_TEST(response.status_text() == "NoSuchBucket: The specified bucket does not exist (HTTP 404 Not Found)");
}

BOOST_AUTO_TEST_CASE(ini_files_as_the_aws_cli_reads_them) {
    const auto sections = parse_ini(
        "# comment\n; another\n[default]\nAWS_Access_Key_ID = AKIA1\naws_secret_access_key=s/e+c=\n"
        "region: eu-west-3\n\n[profile team]\ns3 =\n  endpoint_url = http://minio:9000\n  addressing_style = path\n"
        "region = us-west-2\n[services local]  \ns3 =\n\tendpoint_url = http://127.0.0.1:9000\n");
    BOOST_TEST(sections.at("default").at("aws_access_key_id") == "AKIA1");
    BOOST_TEST(sections.at("default").at("aws_secret_access_key") == "s/e+c=");
    BOOST_TEST(sections.at("default").at("region") == "eu-west-3");
    BOOST_TEST(sections.at("profile team").at("s3.endpoint_url") == "http://minio:9000");
    BOOST_TEST(sections.at("profile team").at("region") == "us-west-2");
    BOOST_TEST(sections.at("services local").at("s3.endpoint_url") == "http://127.0.0.1:9000");
}

// A fake environment and the shared files in a temporary home folder.
struct AwsHome {
    test::TempFolder home;
    std::map<std::string, std::string> variables;

    AwsHome() { variables["HOME"] = home.path().string(); }

    void write(const std::string& relative, const std::string& text) const { home.write(relative, text); }
    AwsSettings settings() const {
        return read_aws_settings([this](const std::string& name) -> std::optional<std::string> {
            const auto found = variables.find(name);
            if (found == variables.end()) return std::nullopt;
            return found->second;
        });
    }
};

BOOST_AUTO_TEST_CASE(no_settings_at_all_means_unsigned_requests_to_aws_in_us_east_1) {
    const AwsHome aws;
    const AwsSettings settings = aws.settings();
    BOOST_TEST(!settings.keys);
    BOOST_TEST(settings.profile == "default");
    BOOST_TEST(settings.region == "us-east-1");
    BOOST_TEST(settings.endpoint.empty());
}

BOOST_AUTO_TEST_CASE(environment_keys_come_before_the_files) {
    AwsHome aws;
    aws.write(".aws/credentials", "[default]\naws_access_key_id = FROMFILE\naws_secret_access_key = file\n");
    aws.variables["AWS_ACCESS_KEY_ID"] = "FROMENV";
    aws.variables["AWS_SECRET_ACCESS_KEY"] = "env";
    aws.variables["AWS_SESSION_TOKEN"] = "token";
    const AwsSettings settings = aws.settings();
    BOOST_TEST(settings.keys->access_key == "FROMENV");
    BOOST_TEST(settings.keys->secret_key == "env");
    BOOST_TEST(settings.keys->session_token == "token");
    BOOST_TEST(settings.keys->found_in == "the environment");

    aws.variables.erase("AWS_ACCESS_KEY_ID");
    aws.variables.erase("AWS_SECRET_ACCESS_KEY");
    const AwsSettings from_file = aws.settings();
    BOOST_TEST(from_file.keys->access_key == "FROMFILE");
    BOOST_TEST(from_file.keys->session_token.empty());
    BOOST_TEST(from_file.keys->found_in.find(".aws/credentials") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(half_a_key_pair_is_refused) {
    AwsHome aws;
    aws.variables["AWS_ACCESS_KEY_ID"] = "AKIA";
    BOOST_CHECK_THROW(aws.settings(), SourceError);
    aws.variables.erase("AWS_ACCESS_KEY_ID");
    aws.write(".aws/credentials", "[default]\naws_secret_access_key = lonely\n");
    BOOST_CHECK_THROW(aws.settings(), SourceError);
}

BOOST_AUTO_TEST_CASE(profiles_from_both_files) {
    AwsHome aws;
    aws.write("elsewhere/credentials", "[default]\naws_access_key_id = D\naws_secret_access_key = d\n"
                                       "[team]\naws_access_key_id = T\naws_secret_access_key = t\n"
                                       "aws_session_token = tt\n");
    aws.write("elsewhere/config", "[default]\nregion = eu-west-1\n[profile team]\nregion = ap-south-1\n"
                                  "endpoint_url = http://team:9000\n[profile config-only]\n"
                                  "aws_access_key_id = C\naws_secret_access_key = c\n[team]\nregion = wrong\n");
    aws.variables["AWS_SHARED_CREDENTIALS_FILE"] = "~/elsewhere/credentials";
    aws.variables["AWS_CONFIG_FILE"] = aws.home.path().string() + "/elsewhere/config";

    AwsSettings settings = aws.settings();
    BOOST_TEST(settings.keys->access_key == "D");
    BOOST_TEST(settings.region == "eu-west-1");
    BOOST_TEST(settings.endpoint.empty());

    aws.variables["AWS_PROFILE"] = "team";
    settings = aws.settings();
    BOOST_TEST(settings.profile == "team");
    BOOST_TEST(settings.keys->access_key == "T");
    BOOST_TEST(settings.keys->session_token == "tt");
    BOOST_TEST(settings.region == "ap-south-1");  // [profile team] of the config file, not [team]
    BOOST_TEST(settings.endpoint == "http://team:9000");

    aws.variables["AWS_PROFILE"] = "config-only";
    settings = aws.settings();
    BOOST_TEST(settings.keys->access_key == "C");
    BOOST_TEST(settings.region == "us-east-1");

    aws.variables["AWS_PROFILE"] = "absent";
    BOOST_CHECK_THROW(aws.settings(), SourceError);
}

BOOST_AUTO_TEST_CASE(region_and_endpoint_precedence) {
    AwsHome aws;
    aws.write(".aws/config", "[default]\nregion = eu-north-1\nendpoint_url = http://profile:1\nservices = local\n"
                             "[services local]\ns3 =\n  endpoint_url = http://services:2\n");
    AwsSettings settings = aws.settings();
    BOOST_TEST(settings.region == "eu-north-1");
    BOOST_TEST(settings.endpoint == "http://services:2");

    aws.variables["AWS_DEFAULT_REGION"] = "eu-west-2";
    aws.variables["AWS_ENDPOINT_URL"] = "http://general:3";
    settings = aws.settings();
    BOOST_TEST(settings.region == "eu-west-2");
    BOOST_TEST(settings.endpoint == "http://general:3");

    aws.variables["AWS_REGION"] = "ca-central-1";
    aws.variables["AWS_ENDPOINT_URL_S3"] = "http://s3-only:4";
    settings = aws.settings();
    BOOST_TEST(settings.region == "ca-central-1");
    BOOST_TEST(settings.endpoint == "http://s3-only:4");

    aws.variables["AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"] = "True";
    BOOST_TEST(aws.settings().endpoint.empty());

    aws.variables["AWS_REGION"] = "us-east-1:evil";
    BOOST_CHECK_THROW(aws.settings(), SourceError);
}

BOOST_AUTO_TEST_CASE(keys_with_control_characters_are_refused) {
    AwsHome aws;
    aws.variables["AWS_ACCESS_KEY_ID"] = "AKIA";
    aws.variables["AWS_SECRET_ACCESS_KEY"] = "secret";
    aws.variables["AWS_SESSION_TOKEN"] = "token\r\nX-Injected: 1";
    BOOST_CHECK_THROW(aws.settings(), SourceError);
}

BOOST_AUTO_TEST_CASE(ways_of_getting_keys_that_tensorfs_does_not_take_are_named) {
    AwsHome aws;
    aws.write(".aws/config", "[profile sso]\nsso_session = corp\n");
    aws.variables["AWS_PROFILE"] = "sso";
    const AwsSettings settings = aws.settings();
    BOOST_TEST(!settings.keys);
    BOOST_TEST(settings.unsupported_source == "profile 'sso' gets them by sso_session");
}

BOOST_AUTO_TEST_CASE(web_identity_from_the_environment_or_the_profile_between_the_keys) {
    AwsHome aws;
    aws.write(".aws/credentials", "[default]\naws_access_key_id = FROMFILE\naws_secret_access_key = file\n");
    aws.write(".aws/config", "[default]\nregion = eu-west-1\n[profile irsa]\nrole_arn = arn:aws:iam::1:role/p\n"
                             "web_identity_token_file = ~/token\nrole_session_name = s\n");
    aws.variables["AWS_ROLE_ARN"] = "arn:aws:iam::1:role/r";
    aws.variables["AWS_WEB_IDENTITY_TOKEN_FILE"] = "/var/run/secrets/eks.amazonaws.com/serviceaccount/token";
    AwsSettings settings = aws.settings();
    BOOST_REQUIRE(settings.web_identity);
    BOOST_TEST(!settings.keys);  // before the files' keys, as botocore's chain has it
    BOOST_TEST(settings.web_identity->role_arn == "arn:aws:iam::1:role/r");
    BOOST_TEST(settings.web_identity->token_file == "/var/run/secrets/eks.amazonaws.com/serviceaccount/token");
    BOOST_TEST(settings.web_identity->session_name.empty());
    BOOST_TEST(settings.web_identity->sts_endpoint == "https://sts.eu-west-1.amazonaws.com");

    aws.variables["AWS_ROLE_SESSION_NAME"] = "mine";
    aws.variables["AWS_ENDPOINT_URL"] = "http://minio:9000";
    BOOST_TEST(aws.settings().web_identity->session_name == "mine");
    BOOST_TEST(aws.settings().web_identity->sts_endpoint == "http://minio:9000");
    aws.variables["AWS_ENDPOINT_URL_STS"] = "http://sts.local:1";
    BOOST_TEST(aws.settings().web_identity->sts_endpoint == "http://sts.local:1");
    BOOST_TEST(aws.settings().endpoint == "http://minio:9000");

    // The environment's keys come first.
    aws.variables["AWS_ACCESS_KEY_ID"] = "FROMENV";
    aws.variables["AWS_SECRET_ACCESS_KEY"] = "env";
    settings = aws.settings();
    BOOST_TEST(settings.keys->access_key == "FROMENV");
    BOOST_TEST(!settings.web_identity);

    // A profile's role with a token file; a token file alone is named as half of one.
    for (const char* name : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
                             "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS"}) {
        aws.variables.erase(name);
    }
    settings = aws.settings();
    BOOST_TEST(settings.keys->access_key == "FROMFILE");
    aws.write(".aws/credentials", "");
    settings = aws.settings();
    BOOST_TEST(!settings.keys);
    BOOST_TEST(settings.incomplete_source == "AWS_WEB_IDENTITY_TOKEN_FILE is set without AWS_ROLE_ARN");
    aws.variables.erase("AWS_WEB_IDENTITY_TOKEN_FILE");
    aws.variables["AWS_PROFILE"] = "irsa";
    settings = aws.settings();
    BOOST_REQUIRE(settings.web_identity);
    BOOST_TEST(settings.web_identity->role_arn == "arn:aws:iam::1:role/p");
    BOOST_TEST(settings.web_identity->token_file == aws.home.path().string() + "/token");
    BOOST_TEST(settings.web_identity->session_name == "s");
    BOOST_TEST(settings.web_identity->sts_endpoint == "https://sts.us-east-1.amazonaws.com");
    BOOST_TEST(settings.unsupported_source.empty());
}

BOOST_AUTO_TEST_CASE(sts_answers_as_aws_writes_them) {
    const TemporaryKeys keys = read_sts_answer(
        "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
        "<AssumeRoleWithWebIdentityResult><SubjectFromWebIdentityToken>amzn1.account</SubjectFromWebIdentityToken>"
        "<Audience>client.5498841531868486423.1548@apps.example.com</Audience><AssumedRoleUser>"
        "<Arn>arn:aws:sts::123456789012:assumed-role/FederatedWebIdentityRole/app1</Arn>"
        "<AssumedRoleId>AROACLKWSDQRAOEXAMPLE:app1</AssumedRoleId></AssumedRoleUser><Credentials>"
        "<SessionToken>AQoDYXdzEE0a8ANXXXXXXXXNO1ewxE5TijQyp+IEXAMPLE</SessionToken>"
        "<SecretAccessKey>wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY</SecretAccessKey>"
        "<Expiration>2014-10-24T23:00:23Z</Expiration><AccessKeyId>ASgeIAIOSFODNN7EXAMPLE</AccessKeyId>"
        "</Credentials><SourceIdentity>SourceIdentityValue</SourceIdentity><Provider>www.amazon.com</Provider>"
        "</AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>ad4156e9-bce1-11e2-82e6-6b6efEXAMPLE"
        "</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>");
    BOOST_TEST(keys.keys.access_key == "ASgeIAIOSFODNN7EXAMPLE");
    BOOST_TEST(keys.keys.secret_key == "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY");
    BOOST_TEST(keys.keys.session_token == "AQoDYXdzEE0a8ANXXXXXXXXNO1ewxE5TijQyp+IEXAMPLE");
    BOOST_TEST(std::chrono::system_clock::to_time_t(keys.expiration) == 1414191623);
    for (const char* bad : {"<ErrorResponse><Error><Code>InvalidIdentityToken</Code></Error></ErrorResponse>",
                            "<AssumeRoleWithWebIdentityResponse/>", "not xml",
                            "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
                            "<AccessKeyId>A</AccessKeyId><SecretAccessKey>S</SecretAccessKey><SessionToken>T"
                            "</SessionToken><Expiration>tomorrow</Expiration></Credentials>"
                            "</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"}) {
        BOOST_CHECK_THROW(read_sts_answer(bad), std::runtime_error);
    }
}

BOOST_AUTO_TEST_CASE(expirations_renewals_and_session_names) {
    using std::chrono::system_clock;
    BOOST_TEST(system_clock::to_time_t(*parse_iso8601("1970-01-02T00:00:01Z")) == 86401);
    BOOST_TEST(system_clock::to_time_t(*parse_iso8601("2024-02-29T12:30:00.123Z")) == 1709209800);
    BOOST_TEST(system_clock::to_time_t(*parse_iso8601("2024-02-29T12:30:00+00:00")) == 1709209800);
    for (const char* bad : {"", "2024-02-29", "2024-02-29T12:30:00", "2024-13-01T00:00:00Z",
                            "2024-02-29T12:30:00+01:00", "2024-02-29T12:30:00Zjunk"}) {
        BOOST_TEST(!parse_iso8601(bad), bad);
    }
    const auto now = system_clock::now();
    // An hour's keys are renewed 5 minutes before they expire; keys of a few seconds halfway through their life.
    BOOST_TEST((now + std::chrono::hours(1) - renewal_time(now, now + std::chrono::hours(1)) ==
                std::chrono::minutes(5)));
    BOOST_TEST((renewal_time(now, now + std::chrono::seconds(4)) - now == std::chrono::seconds(2)));
    BOOST_TEST(session_name_of("tensorfs.ml.pod-1") == "tensorfs.ml.pod-1");
    BOOST_TEST(session_name_of("a b/c:d") == "a_b_c_d");
    BOOST_TEST(session_name_of("x") == "x_");
    BOOST_TEST(session_name_of(std::string(100, 'n')).size() == 64);
}

BOOST_AUTO_TEST_CASE(s3_addresses) {
    const S3Address object = parse_s3_address("s3://my-bucket/models/llama/model.safetensors");
    BOOST_TEST(object.bucket == "my-bucket");
    BOOST_TEST(object.key == "models/llama/model.safetensors");
    BOOST_TEST(parse_s3_address("s3://b").key.empty());
    BOOST_TEST(parse_s3_address("s3://b/p/").key == "p/");
    for (const char* bad : {"s3://", "s3:///key", "s3://bad bucket/k", "s3://b/a/../k", "s3://b/./k"}) {
        BOOST_CHECK_THROW(parse_s3_address(bad), SourceError);
    }
}

BOOST_AUTO_TEST_CASE(urls_on_aws_and_on_a_custom_endpoint) {
    AwsSettings settings;
    settings.region = "eu-west-3";
    const S3Endpoint aws("my-bucket", settings);
    BOOST_TEST(aws.object_url("a b/c+d~e.gguf") == "https://my-bucket.s3.eu-west-3.amazonaws.com/a%20b/c%2Bd~e.gguf");
    BOOST_TEST(aws.listing_url("m/", "") ==
               "https://my-bucket.s3.eu-west-3.amazonaws.com/?delimiter=%2F&list-type=2&prefix=m%2F");
    BOOST_TEST(aws.origin() == "https://my-bucket.s3.eu-west-3.amazonaws.com:443");

    // Dots do not fit the virtual host's certificate: path style.
    BOOST_TEST(S3Endpoint("my.bucket", settings).object_url("k") == "https://s3.eu-west-3.amazonaws.com/my.bucket/k");
    settings.region = "cn-north-1";
    BOOST_TEST(S3Endpoint("b-1", settings).object_url("k") == "https://b-1.s3.cn-north-1.amazonaws.com.cn/k");

    settings.endpoint = "http://127.0.0.1:9000/";
    const S3Endpoint custom("my-bucket", settings);
    BOOST_TEST(custom.object_url("m/x.gguf") == "http://127.0.0.1:9000/my-bucket/m/x.gguf");
    // Parameters sorted by name and every byte but the unreserved ones encoded: SigV4's canonical query.
    BOOST_TEST(custom.listing_url("m n/", "a+b/c=") ==
               "http://127.0.0.1:9000/my-bucket?continuation-token=a%2Bb%2Fc%3D&delimiter=%2F&list-type=2&prefix=m%20n%2F");
    // Every key under the prefix (source/): no delimiter.
    BOOST_TEST(custom.listing_url("m/", "t", true) == "http://127.0.0.1:9000/my-bucket?continuation-token=t&list-type=2&prefix=m%2F");
    BOOST_TEST(custom.origin() == "http://127.0.0.1:9000");

    settings.endpoint = "ftp://host";
    BOOST_CHECK_THROW(S3Endpoint("b", settings), SourceError);
}

BOOST_AUTO_TEST_CASE(file_names_and_prefixes) {
    BOOST_TEST(names_a_file("m/model.safetensors.index.json"));
    BOOST_TEST(names_a_file("x.gguf"));
    BOOST_TEST(!names_a_file("models/llama"));
    BOOST_TEST(!names_a_file("models/llama/"));
}

// The checksums prefetch --verify takes from S3 (values of SHA-256 and MD5 of "abc", as AWS writes them).
BOOST_AUTO_TEST_CASE(published_checksums) {
    BOOST_TEST(sha256_of_s3_checksum("ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=").value() ==
               "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    // A multipart upload's composite checksum (of the parts' checksums) is not the whole object's.
    BOOST_TEST(!sha256_of_s3_checksum("ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=-3"));
    BOOST_TEST(!sha256_of_s3_checksum(""));
    BOOST_TEST(!sha256_of_s3_checksum("ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0"));
    BOOST_TEST(!sha256_of_s3_checksum("ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAF==="));
    BOOST_TEST(!sha256_of_s3_checksum("ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAF!0="));
    const std::string etag = "\"900150983cd24fb0d6963f7d28e17f72\"";
    BOOST_TEST(md5_of_s3_etag(etag, "").value() == "900150983cd24fb0d6963f7d28e17f72");
    BOOST_TEST(md5_of_s3_etag(etag, "AES256").value() == "900150983cd24fb0d6963f7d28e17f72");
    // KMS and customer keys give ETags that are no MD5; so does a multipart upload.
    BOOST_TEST(!md5_of_s3_etag(etag, "aws:kms"));
    BOOST_TEST(!md5_of_s3_etag(etag, "SSE-C"));
    BOOST_TEST(!md5_of_s3_etag("\"900150983cd24fb0d6963f7d28e17f72-2\"", ""));
    BOOST_TEST(!md5_of_s3_etag("W/\"900150983cd24fb0d6963f7d28e17f72\"", ""));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace tensorfs::remote

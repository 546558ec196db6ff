// The kinds of errors every front end answers in its own terms: their names and errnos, the kind of a server's
// answer, the one-line form of a message, and the record a mount gives the CSI plugin.
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <ostream>
#include <string>

#include "remote/http_client.hpp"
#include "tensorfs/errors.hpp"
#include "tensorfs/mount_failure.hpp"

namespace tensorfs {
namespace {

constexpr ErrorKind kEveryErrorKind[] = {ErrorKind::InvalidSource, ErrorKind::NotFound,    ErrorKind::Permission,
                                    ErrorKind::Unavailable,   ErrorKind::TimedOut,    ErrorKind::Unsupported,
                                    ErrorKind::Io};

remote::Response answer_of_status(long status, std::string error_code = {}) {
    remote::Response response;
    response.status = status;
    response.error_code = std::move(error_code);
    return response;
}

}  // namespace

std::ostream& operator<<(std::ostream& out, ErrorKind kind) { return out << kind_name(kind); }

BOOST_AUTO_TEST_SUITE(error_kinds)

BOOST_AUTO_TEST_CASE(each_kind_has_a_name_that_names_it_back_and_an_errno) {
    for (const ErrorKind kind : kEveryErrorKind) {
        BOOST_TEST((kind_named(kind_name(kind)) == kind));
    }
    for (const ErrorKind kind : {ErrorKind::NotFound, ErrorKind::Permission, ErrorKind::TimedOut, ErrorKind::Io}) {
        BOOST_TEST(kind_of_errno(errno_of(kind)) == kind);  // the kinds a failed system call can have
    }
    BOOST_TEST(errno_of(ErrorKind::NotFound) == ENOENT);
    BOOST_TEST(errno_of(ErrorKind::Permission) == EACCES);
    BOOST_TEST(errno_of(ErrorKind::TimedOut) == ETIMEDOUT);
    BOOST_TEST(errno_of(ErrorKind::Io) == EIO);
    BOOST_TEST(!kind_named("missing").has_value());
}

BOOST_AUTO_TEST_CASE(a_servers_answer_has_the_kind_of_its_status_or_s3_code) {
    BOOST_TEST(remote::kind_of(answer_of_status(404)) == ErrorKind::NotFound);
    BOOST_TEST(remote::kind_of(answer_of_status(410)) == ErrorKind::NotFound);
    BOOST_TEST(remote::kind_of(answer_of_status(401)) == ErrorKind::Permission);
    BOOST_TEST(remote::kind_of(answer_of_status(403)) == ErrorKind::Permission);
    BOOST_TEST(remote::kind_of(answer_of_status(400, "ExpiredToken")) == ErrorKind::Permission);
    BOOST_TEST(remote::kind_of(answer_of_status(408)) == ErrorKind::TimedOut);
    BOOST_TEST(remote::kind_of(answer_of_status(429)) == ErrorKind::Unavailable);
    BOOST_TEST(remote::kind_of(answer_of_status(503)) == ErrorKind::Unavailable);
    BOOST_TEST(remote::kind_of(answer_of_status(416)) == ErrorKind::InvalidSource);
}

BOOST_AUTO_TEST_CASE(a_single_line_escapes_control_bytes_and_broken_utf8) {
    BOOST_TEST(single_line("two\nlines") == "two\\x0Alines");
    BOOST_TEST(single_line("caf\xc3\xa9") == "caf\xc3\xa9");                 // valid UTF-8 stays
    BOOST_TEST(single_line("bad \x80 byte") == "bad \\x80 byte");           // a lone continuation byte
    BOOST_TEST(single_line("cut \xe2\x82") == "cut \\xE2\\x82");           // a sequence cut short
    BOOST_TEST(single_line("overlong \xc0\xaf") == "overlong \\xC0\\xAF");  // '/' spelled in two bytes
}

BOOST_AUTO_TEST_CASE(a_source_error_says_its_first_problem_and_how_many_more) {
    const SourceError one({Problem{"a.gguf", "bad magic", 0, ErrorKind::InvalidSource}});
    BOOST_TEST(one.summary() == "a.gguf: bad magic (at byte 0)");
    const SourceError three({Problem{"a", "first", std::nullopt, ErrorKind::NotFound},
                             Problem{"b", "second", std::nullopt, ErrorKind::InvalidSource},
                             Problem{"c", "third", std::nullopt, ErrorKind::InvalidSource}});
    BOOST_TEST(three.summary() == "a: first (and 2 more problems: tensorfs validate lists them)");
    BOOST_TEST(three.kind() == ErrorKind::NotFound);
    Problems kept;
    kept.add_all(three);
    try {
        kept.throw_if_any();
        BOOST_FAIL("no SourceError");
    } catch (const SourceError& again) {
        BOOST_TEST(again.problems().size() == 3u);
        BOOST_TEST(again.kind() == ErrorKind::NotFound);
    }
}

BOOST_AUTO_TEST_CASE(a_mount_failure_record_reads_back_and_no_other_line_does) {
    for (const ErrorKind kind : kEveryErrorKind) {
        const MountFailure said{kind, "tensorfs: s3://b/\"m\".gguf: Access Denied"};
        const std::string line = failure_record(said);
        BOOST_TEST(line.find('\n') == std::string::npos);
        const auto read = read_failure_record(line);
        BOOST_REQUIRE(read.has_value());
        BOOST_TEST(read->kind == kind);
        BOOST_TEST(read->message == said.message);
    }
    BOOST_TEST(!read_failure_record("tensorfs: x.gguf: bad magic").has_value());
    BOOST_TEST(!read_failure_record("{\"error\": {\"kind\": \"no such kind\", \"message\": \"m\"}}").has_value());
    BOOST_TEST(!read_failure_record("{\"error\": 3}").has_value());
    BOOST_TEST(!read_failure_record("{\"error\": {\"kind\": \"io\"").has_value());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace tensorfs

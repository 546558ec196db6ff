// timeout=: its value, the deadline every request keeps (against a server that never answers and one that refuses),
// the memory of bytes that got no answer, and when a read began.
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "remote/http_client.hpp"
#include "remote/remote_context.hpp"
#include "temp_folder.hpp"
#include "tensorfs/read_began.hpp"
#include "tensorfs/source_options.hpp"

namespace tensorfs::remote {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A TCP socket bound to a free port of 127.0.0.1; `port` gets the port.
int bound_loopback_socket(unsigned& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    BOOST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    BOOST_REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    port = ntohs(address.sin_port);
    return fd;
}

// A listening socket on 127.0.0.1 that never accepts: the kernel completes connections into its backlog and takes
// the request, and nothing ever answers (a stopped or hung server). `listening` false: bound and closed again, a port
// that refuses connections.
class SilentPort {
public:
    explicit SilentPort(bool listening) {
        fd_ = bound_loopback_socket(port_);
        if (listening) {
            BOOST_REQUIRE(::listen(fd_, 16) == 0);
        } else {
            ::close(fd_);
            fd_ = -1;
        }
    }
    ~SilentPort() {
        if (fd_ >= 0) ::close(fd_);
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/model.safetensors"; }

private:
    int fd_ = -1;
    unsigned port_ = 0;
};

// A server on 127.0.0.1 that answers one request with `answer` (all of it, as given), from a thread of its own.
class OneAnswer {
public:
    explicit OneAnswer(std::string answer) {
        listening_ = bound_loopback_socket(port_);
        BOOST_REQUIRE(::listen(listening_, 4) == 0);
        thread_ = std::thread([this, answer = std::move(answer)] {
            const int connection = ::accept4(listening_, nullptr, nullptr, SOCK_CLOEXEC);
            if (connection < 0) return;
            std::string request;
            char buffer[4096];
            while (request.find("\r\n\r\n") == std::string::npos) {
                const ssize_t got = ::read(connection, buffer, sizeof buffer);
                if (got <= 0) break;
                request.append(buffer, static_cast<std::size_t>(got));
            }
            for (std::size_t sent = 0; sent < answer.size();) {
                const ssize_t wrote = ::write(connection, answer.data() + sent, answer.size() - sent);
                if (wrote <= 0) break;
                sent += static_cast<std::size_t>(wrote);
            }
            ::close(connection);
        });
    }
    ~OneAnswer() {
        ::shutdown(listening_, SHUT_RDWR);  // ends an accept that never got its request
        thread_.join();
        ::close(listening_);
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/model.safetensors"; }

private:
    int listening_ = -1;
    unsigned port_ = 0;
    std::thread thread_;
};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(timeouts)

BOOST_AUTO_TEST_CASE(timeout_takes_positive_seconds_with_a_fraction) {
    BOOST_TEST(parse_timeout("20")->count() == 20'000);
    BOOST_TEST(parse_timeout("2.5")->count() == 2'500);
    BOOST_TEST(parse_timeout("0.0001")->count() == 1);  // rounded up: never "no time at all"
    BOOST_TEST(parse_timeout("86400")->count() == 86'400'000);
    for (const char* bad : {"", "0", "-1", "1s", "abc", "nan", "inf", "86401", " 5", "5 "}) {
        BOOST_TEST(!parse_timeout(bad), bad);
    }
    BOOST_TEST(SourceOptions{}.timeout == kDefaultTimeout);
}

BOOST_AUTO_TEST_CASE(messages_name_the_timeout_as_the_option_spells_it) {
    BOOST_TEST(timeout_text(20s) == "20 s (timeout=20)");
    BOOST_TEST(timeout_text(2500ms) == "2.5 s (timeout=2.5)");
    BOOST_TEST(timeout_text(1ms) == "0.001 s (timeout=0.001)");
}

// The request goes out and nothing answers: it fails when its deadline passes, not after the retries' own limits
// (20 s of silence per try).
BOOST_AUTO_TEST_CASE(a_request_to_a_server_that_never_answers_ends_at_its_deadline) {
    const SilentPort silent(true);
    RemoteCounters counters;
    HttpClient client(counters, {}, 300ms);
    Request request;
    request.url = silent.url();
    const auto started = Clock::now();
    try {
        client.send(request);
        BOOST_FAIL("a silent server answered");
    } catch (const HttpError& error) {
        BOOST_TEST(std::string(error.what()).find("no answer within 0.3 s (timeout=0.3)") != std::string::npos,
                   error.what());
    }
    BOOST_TEST(seconds_since(started) < 15.0);  // a generous bound: the retries alone would take minutes
}

// Refused connections are retried with backoff while time is left, then the last failure is told with the timeout.
BOOST_AUTO_TEST_CASE(a_refused_connection_is_retried_until_the_deadline_then_named) {
    const SilentPort closed(false);
    RemoteCounters counters;
    HttpClient client(counters, {}, 600ms);
    Request request;
    request.url = closed.url();
    try {
        client.send(request);
        BOOST_FAIL("a closed port answered");
    } catch (const HttpError& error) {
        const std::string what = error.what();
        BOOST_TEST(what.find("cannot connect") != std::string::npos, what);
        BOOST_TEST(what.find("gave up after 0.6 s (timeout=0.6)") != std::string::npos, what);
    }
    BOOST_TEST(counters.retries.get() >= 1);
    BOOST_TEST(counters.retries.get() < 5);  // the deadline, not the count of tries, ended it
}

// A deadline the caller set (a reader's, who began waiting earlier) wins over the client's own timeout.
BOOST_AUTO_TEST_CASE(a_deadline_already_past_sends_nothing) {
    const SilentPort silent(true);
    RemoteCounters counters;
    HttpClient client(counters, {}, 20s);
    Request request;
    request.url = silent.url();
    request.deadline = Clock::now() - 1ms;
    BOOST_CHECK_THROW(client.send(request), HttpError);
    BOOST_TEST(counters.requests.get() == 0);
}

// Once a request got no answer, the server is silent (reads fail at once, no read-ahead starts) until it sends
// something again, or one timeout later.
BOOST_AUTO_TEST_CASE(a_server_that_gave_no_answer_is_silent_until_it_answers_or_a_timeout_later) {
    const test::TempFolder folder;
    SourceOptions options;
    options.cache_dir = folder.path();
    // A timeout no busy machine outlasts between two lines: the checks do not depend on how fast this runs.
    options.timeout = std::chrono::hours(1);
    RemoteContext patient(options, {}, [](const Response&) { return std::string(); });
    BOOST_TEST(!patient.silent());
    BOOST_TEST(!patient.silence().has_value());
    patient.no_answer();
    BOOST_TEST(patient.silent());
    BOOST_TEST(patient.counters().unanswered.get() == 1u);
    BOOST_TEST((*patient.silence() < std::chrono::hours(1)));
    patient.answered();
    BOOST_TEST(!patient.silent());

    const test::TempFolder other_folder;
    options.cache_dir = other_folder.path();
    options.timeout = 200ms;
    RemoteContext impatient(options, {}, [](const Response&) { return std::string(); });
    impatient.no_answer();
    // One timeout later the server is asked again: within a generous bound (polled, never slept for a fixed time).
    const auto bound = Clock::now() + 30s;
    while (impatient.silent() && Clock::now() < bound) std::this_thread::sleep_for(10ms);
    BOOST_TEST(!impatient.silent());
}

// on_answer hears every header line and part of the body (a slow body keeps the server from being taken for
// silent), and nothing from a server that never answers.
BOOST_AUTO_TEST_CASE(on_answer_hears_what_the_server_sends_and_only_that) {
    const OneAnswer server("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-3/4\r\nContent-Length: 4\r\n\r\nabcd");
    RemoteCounters counters;
    HttpClient client(counters, {}, 20s);
    Request request;
    request.url = server.url();
    request.ranged = true;
    request.first = 0;
    request.last = 3;
    request.capacity = 4;
    int heard = 0;
    request.on_answer = [&heard] { ++heard; };
    const Response response = client.send(request);
    BOOST_TEST(response.status == 206);
    BOOST_TEST(response.body == "abcd");
    BOOST_TEST(heard >= 5);  // the status line, two headers, the blank line, the body

    const SilentPort silent(true);
    HttpClient impatient(counters, {}, 300ms);
    Request unanswered;
    unanswered.url = silent.url();
    heard = 0;
    unanswered.on_answer = [&heard] { ++heard; };
    BOOST_CHECK_THROW(impatient.send(unanswered), HttpError);
    BOOST_TEST(heard == 0);
}

BOOST_AUTO_TEST_CASE(a_read_begins_when_marked_else_when_asked) {
    const auto arrived = Clock::now() - 5s;
    {
        const ReadBegan began(arrived);
        BOOST_TEST((read_began() == arrived));
        {
            const ReadBegan inner(arrived + 1s);
            BOOST_TEST((read_began() == arrived + 1s));
        }
        BOOST_TEST((read_began() == arrived));
        std::thread([&] { BOOST_TEST((read_began() > arrived + 4s)); }).join();  // another thread: its own
    }
    BOOST_TEST((read_began() > arrived + 4s));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace tensorfs::remote

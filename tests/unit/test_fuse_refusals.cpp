// The FUSE adapter answers every mutating request with EROFS, fed as raw protocol messages through a libfuse
// session with custom I/O (no kernel, no mount). This reaches what no mount can: a kernel sends write and
// fallocate only for a descriptor open for writing, and the adapter never opens one, so the integration test
// (tests/integration/test_readonly.py) sees those two refused by the kernel, never by the daemon.
#include <fcntl.h>
#include <linux/fuse.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "fuse/fuse_ops.hpp"
#include "tensorfs/engine.hpp"
#include "vectors.hpp"

using namespace tensorfs;

namespace {

// The replies libfuse wrote, each as one buffer (header and body).
std::vector<std::string> replies;

ssize_t capture_reply(int, struct iovec* iov, int count, void*) {
    std::string reply;
    for (int i = 0; i < count; ++i) reply.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
    replies.push_back(reply);
    return static_cast<ssize_t>(reply.size());
}

ssize_t no_reads(int, void*, size_t, void*) { return 0; }

template <typename T>
std::string bytes_of(const T& value) {
    return std::string(reinterpret_cast<const char*>(&value), sizeof value);
}

std::string with_nul(const std::string& text) { return text + '\0'; }

// A mounted-like adapter over a real catalog, talking to a session whose replies land in `replies`.
class Session {
public:
    Session() : engine_(test::vectors_path("gguf/align64.gguf"), {}), filesystem_{engine_, 0, {}, ::getuid(), ::getgid()} {
        char program[] = "tensorfs-test";
        char* argv[] = {program, nullptr};
        fuse_args args = FUSE_ARGS_INIT(1, argv);
        const auto& ops = tensorfs_operations();
        session_ = fuse_session_new(&args, &ops, sizeof ops, &filesystem_);
        fuse_opt_free_args(&args);  // libfuse may have copied the arguments
        BOOST_TEST_REQUIRE(session_ != nullptr);
        const fuse_custom_io io{capture_reply, no_reads, nullptr, nullptr};
        BOOST_TEST_REQUIRE(fuse_session_custom_io(session_, &io, ::open("/dev/null", O_RDWR | O_CLOEXEC)) == 0);

        fuse_init_in init{};
        init.major = FUSE_KERNEL_VERSION;
        init.minor = 31;  // what libfuse 3.14's kernels speak
        init.max_readahead = 1 << 20;
        const std::string reply = send(FUSE_INIT, FUSE_ROOT_ID, bytes_of(init));
        BOOST_TEST_REQUIRE(error_of(reply) == 0);
    }
    ~Session() { fuse_session_destroy(session_); }

    // Sends one request and returns its reply.
    std::string send(std::uint32_t opcode, std::uint64_t nodeid, const std::string& body) {
        fuse_in_header header{};
        header.len = static_cast<std::uint32_t>(sizeof header + body.size());
        header.opcode = opcode;
        header.unique = ++unique_;
        header.nodeid = nodeid;
        header.uid = ::getuid();
        header.gid = ::getgid();
        header.pid = static_cast<std::uint32_t>(::getpid());
        std::string message = bytes_of(header) + body;
        fuse_buf buf{};
        buf.mem = message.data();
        buf.size = message.size();
        replies.clear();
        fuse_session_process_buf(session_, &buf);
        BOOST_TEST_REQUIRE(replies.size() == 1u, "one reply to opcode " << opcode);
        const std::string reply = replies.front();
        BOOST_TEST_REQUIRE(reply.size() >= sizeof(fuse_out_header));
        fuse_out_header out;
        std::memcpy(&out, reply.data(), sizeof out);
        BOOST_TEST(out.unique == unique_);
        return reply;
    }

    static std::int32_t error_of(const std::string& reply) {
        fuse_out_header out;
        std::memcpy(&out, reply.data(), sizeof out);
        return out.error;
    }

    std::uint64_t inode(Node node) const { return Tree::inode_of(node); }
    std::string tensor_directory() const { return std::string(engine_.tree().directory_name(0)); }

private:
    Engine engine_;
    Filesystem filesystem_;
    fuse_session* session_ = nullptr;
    std::uint64_t unique_ = 0;
};

struct Request {
    const char* what;
    std::uint32_t opcode;
    std::uint64_t nodeid;
    std::string body;
};

std::vector<Request> mutating_requests(const Session& session) {
    const std::uint64_t root = FUSE_ROOT_ID;
    const std::uint64_t tensor = session.inode(Node{NodeKind::TensorDir, 0});
    const std::uint64_t raw = session.inode(Node{NodeKind::Raw, 0});

    fuse_setattr_in truncate{};
    truncate.valid = FATTR_SIZE;
    fuse_setattr_in chmod{};
    chmod.valid = FATTR_MODE;
    chmod.mode = 0666;
    fuse_setattr_in chown{};
    chown.valid = FATTR_UID | FATTR_GID;
    fuse_setattr_in utime{};
    utime.valid = FATTR_ATIME | FATTR_MTIME;
    fuse_mknod_in mknod{};
    mknod.mode = S_IFREG | 0644;
    fuse_mkdir_in mkdir{};
    mkdir.mode = 0755;
    fuse_rename_in rename{};
    rename.newdir = root;
    fuse_link_in link{};
    link.oldnodeid = raw;
    fuse_write_in write{};
    write.size = 4;
    fuse_create_in create{};
    create.flags = O_WRONLY | O_CREAT;
    create.mode = 0644;
    fuse_open_in open_write{};
    open_write.flags = O_WRONLY;
    fuse_open_in open_truncate{};
    open_truncate.flags = O_RDONLY | O_TRUNC;
    // Without FUSE_SETXATTR_EXT, libfuse reads the 8-byte form: size, flags, then the name and the value.
    struct {
        std::uint32_t size = 1;
        std::uint32_t flags = 0;
    } setxattr;
    fuse_fallocate_in fallocate{};
    fallocate.length = 4096;

    return {
        {"setattr: truncate", FUSE_SETATTR, raw, bytes_of(truncate)},
        {"setattr: chmod", FUSE_SETATTR, raw, bytes_of(chmod)},
        {"setattr: chown", FUSE_SETATTR, tensor, bytes_of(chown)},
        {"setattr: utime", FUSE_SETATTR, raw, bytes_of(utime)},
        {"mknod", FUSE_MKNOD, root, bytes_of(mknod) + with_nul("node")},
        {"mkdir", FUSE_MKDIR, tensor, bytes_of(mkdir) + with_nul("new")},
        {"unlink", FUSE_UNLINK, tensor, with_nul("raw")},
        {"rmdir", FUSE_RMDIR, root, with_nul(session.tensor_directory())},
        {"symlink", FUSE_SYMLINK, root, with_nul("link") + with_nul("model.json")},
        {"rename", FUSE_RENAME, tensor, bytes_of(rename) + with_nul("raw") + with_nul("moved")},
        {"link", FUSE_LINK, root, bytes_of(link) + with_nul("hardlink")},
        {"write", FUSE_WRITE, raw, bytes_of(write) + "abcd"},
        {"create", FUSE_CREATE, root, bytes_of(create) + with_nul("new")},
        {"open for writing", FUSE_OPEN, raw, bytes_of(open_write)},
        {"open with O_TRUNC", FUSE_OPEN, raw, bytes_of(open_truncate)},
        {"setxattr", FUSE_SETXATTR, raw, bytes_of(setxattr) + with_nul("user.tensorfs") + "1"},
        {"removexattr", FUSE_REMOVEXATTR, raw, with_nul("user.tensorfs")},
        {"fallocate", FUSE_FALLOCATE, raw, bytes_of(fallocate)},
    };
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fuse_refusals)

BOOST_AUTO_TEST_CASE(every_mutating_request_is_answered_erofs) {
    Session session;
    for (const Request& request : mutating_requests(session)) {
        BOOST_TEST_CONTEXT(request.what) {
            const std::string reply = session.send(request.opcode, request.nodeid, request.body);
            BOOST_TEST(Session::error_of(reply) == -EROFS);
            BOOST_TEST(reply.size() == sizeof(fuse_out_header));
        }
    }
    // Refusals are answers, not a broken session: an open for reading still succeeds.
    fuse_open_in open_read{};
    open_read.flags = O_RDONLY;
    const std::string reply = session.send(FUSE_OPEN, session.inode(Node{NodeKind::Raw, 0}), bytes_of(open_read));
    BOOST_TEST(Session::error_of(reply) == 0);
}

BOOST_AUTO_TEST_SUITE_END()

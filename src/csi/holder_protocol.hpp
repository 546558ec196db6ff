// The mount holder's protocol (tensorfs-holder, holder_main.cpp): the CSI plugin asks the holder, over a unix
// socket (SOCK_SEQPACKET) that both containers see, to run `tensorfs mount` for a volume, so that the volume's
// daemon is the holder's child and lives on when the plugin's container is restarted or replaced.
//
// One request per connection. The plugin sends one message: a JSON object {"volume": ID, "source": SOURCE,
// "args": [...], "env": ["NAME=VALUE", ...]} and, as SCM_RIGHTS, three descriptors: the tensorfs binary to run
// (opened by the plugin in its own image, so that the daemons are the plugin's version, not the holder's), the
// child's standard input (the secrets' pipe) and its standard error (what `tensorfs mount` says before its daemon
// goes to the background, read by the plugin for its answer to kubelet). The child's descriptor 3 is the holder's
// own stderr: `-o log_fd=3` sends the daemon's log lines to the holder's container log. When the command's process
// ends (its daemon serves, or it failed), the holder answers with one message: {"status": WAIT_STATUS} or
// {"error": TEXT}. A connection that sends nothing is a probe.
#pragma once

#include <string>
#include <vector>

namespace tensorfs::csi {

// The most bytes of one message, either way.
inline constexpr std::size_t kMostHolderMessage = 256 * 1024;
// The descriptors of a request, in order.
inline constexpr int kHolderFds = 3;
// The child's descriptor that is the holder's stderr.
inline constexpr int kHolderLogFd = 3;

// Sends `text` with `fds` (none, or kHolderFds) as one message. Returns 0 or an errno value.
int send_message(int socket, const std::string& text, const std::vector<int>& fds);

// Receives one message and up to kHolderFds descriptors (received descriptors are close-on-exec). Returns 0 or an
// errno value; an empty `text` with 0: the other end closed without a message.
int receive_message(int socket, std::string& text, std::vector<int>& fds);

// A connected SOCK_SEQPACKET socket to `path`, or -1 with errno set.
int connect_to_holder(const std::string& path);

}  // namespace tensorfs::csi

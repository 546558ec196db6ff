// Keeping secrets out of `ps`: /proc/PID/cmdline is readable by every user, /proc/PID/environ by the owner, and
// both show the bytes of the process's first argument and environment areas for its whole life.
#pragma once

#include <string>

namespace tensorfs::cli {

// Overwrites, in place, the password of every URL in argv (`https://USER:PASSWORD@HOST/…` shows as
// `https://USER:***…@HOST/…`) and the value of every secret in the environment area (such a URL, HF_TOKEN,
// HUGGING_FACE_HUB_TOKEN, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN). The process keeps using them: call it after
// argv was copied, and before any thread starts (a secret variable is first copied to the heap with setenv).
void hide_secrets_from_ps(int argc, char** argv);

// `text` with the password of every URL in it shown as `***`.
std::string with_passwords_hidden(const std::string& text);

}  // namespace tensorfs::cli

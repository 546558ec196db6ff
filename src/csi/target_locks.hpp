// One operation at a time per target path: kubelet may call again while a slow publish (a remote source) is still
// at work; the second call gets ABORTED, as the CSI spec asks, and kubelet tries later.
#pragma once

#include <mutex>
#include <set>
#include <string>

namespace tensorfs::csi {

class TargetLocks {
public:
    class Held {
    public:
        Held(TargetLocks* locks, std::string target) : locks_(locks), target_(std::move(target)) {}
        Held(Held&& other) noexcept : locks_(other.locks_), target_(std::move(other.target_)) {
            other.locks_ = nullptr;
        }
        Held(const Held&) = delete;
        Held& operator=(const Held&) = delete;
        Held& operator=(Held&&) = delete;
        ~Held() {
            if (locks_ != nullptr) locks_->release(target_);
        }
        explicit operator bool() const { return locks_ != nullptr; }

    private:
        TargetLocks* locks_;
        std::string target_;
    };

    // Held (true) when no other operation holds `target`; else an empty Held.
    Held take(const std::string& target) {
        const std::lock_guard lock(mutex_);
        if (!busy_.insert(target).second) return Held(nullptr, target);
        return Held(this, target);
    }

private:
    void release(const std::string& target) {
        const std::lock_guard lock(mutex_);
        busy_.erase(target);
    }

    std::mutex mutex_;
    std::set<std::string> busy_;
};

}  // namespace tensorfs::csi

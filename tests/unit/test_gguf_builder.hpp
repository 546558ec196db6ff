// Builds small GGUF files byte by byte for the parser's tests, including files that break the format's rules
// on purpose, and writes them into a temporary folder.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>
#include "temp_folder.hpp"

namespace tensorfs::test {

// GGUF value type ids (the vectors' README).
enum GgufValueType : std::uint32_t {
    kGgufUint8 = 0, kGgufInt8 = 1, kGgufUint16 = 2, kGgufInt16 = 3, kGgufUint32 = 4, kGgufInt32 = 5,
    kGgufFloat32 = 6, kGgufBool = 7, kGgufString = 8, kGgufArray = 9, kGgufUint64 = 10, kGgufInt64 = 11,
    kGgufFloat64 = 12,
};

// ggml's type id of float32 tensors.
constexpr std::uint32_t kF32 = 0;

class GgufBuilder {
public:
    explicit GgufBuilder(std::uint32_t version = 3, std::uint32_t alignment = 32)
        : version_(version), alignment_(alignment) {}

    // A key/value pair: the key, the type id, then `value` exactly as it should be stored.
    GgufBuilder& kv(const std::string& key, std::uint32_t type, const std::vector<std::uint8_t>& value) {
        put_string(kvs_, key);
        put(kvs_, type);
        kvs_.insert(kvs_.end(), value.begin(), value.end());
        ++kv_count_;
        return *this;
    }
    GgufBuilder& kv_u32(const std::string& key, std::uint32_t value) { return kv(key, kGgufUint32, bytes_of(value)); }
    GgufBuilder& kv_u16(const std::string& key, std::uint16_t value) { return kv(key, kGgufUint16, bytes_of(value)); }
    GgufBuilder& kv_i32(const std::string& key, std::int32_t value) { return kv(key, kGgufInt32, bytes_of(value)); }
    GgufBuilder& kv_string(const std::string& key, const std::string& value) {
        std::vector<std::uint8_t> bytes;
        put_string(bytes, value);
        return kv(key, kGgufString, bytes);
    }
    // The split keys as llama.cpp's gguf-split writes them.
    GgufBuilder& split(std::uint16_t no, std::uint16_t count, std::int32_t tensors_count) {
        return kv_u16("split.no", no).kv_u16("split.count", count).kv_i32("split.tensors.count", tensors_count);
    }

    // A tensor info; `offset` is relative to the data section.
    GgufBuilder& tensor(const std::string& name, const std::vector<std::int64_t>& ne, std::uint32_t type_id,
                        std::uint64_t offset) {
        put_string(infos_, name);
        put(infos_, static_cast<std::uint32_t>(ne.size()));
        for (const auto size : ne) put(infos_, size);
        put(infos_, type_id);
        put(infos_, offset);
        ++tensor_count_;
        return *this;
    }

    // The data section's bytes (after the header's padding to the alignment).
    GgufBuilder& data(std::vector<std::uint8_t> bytes) {
        data_ = std::move(bytes);
        return *this;
    }

    std::vector<std::uint8_t> bytes() const {
        std::vector<std::uint8_t> out = {'G', 'G', 'U', 'F'};
        put(out, version_);
        put(out, tensor_count_);
        put(out, kv_count_);
        out.insert(out.end(), kvs_.begin(), kvs_.end());
        out.insert(out.end(), infos_.begin(), infos_.end());
        out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, 0);
        out.insert(out.end(), data_.begin(), data_.end());
        return out;
    }

    template <typename T>
    static std::vector<std::uint8_t> bytes_of(const T& value) {
        std::vector<std::uint8_t> out(sizeof value);
        std::memcpy(out.data(), &value, sizeof value);
        return out;
    }

    template <typename T>
    static void put(std::vector<std::uint8_t>& out, const T& value) {
        const auto bytes = bytes_of(value);
        out.insert(out.end(), bytes.begin(), bytes.end());
    }

    static void put_string(std::vector<std::uint8_t>& out, const std::string& text) {
        put(out, static_cast<std::uint64_t>(text.size()));
        out.insert(out.end(), text.begin(), text.end());
    }

private:
    std::uint32_t version_;
    std::uint32_t alignment_;
    std::uint64_t tensor_count_ = 0;
    std::uint64_t kv_count_ = 0;
    std::vector<std::uint8_t> kvs_;
    std::vector<std::uint8_t> infos_;
    std::vector<std::uint8_t> data_;
};

}  // namespace tensorfs::test

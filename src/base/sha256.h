// SHA-256 over OpenSSL's EVP interface: one-shot for short strings (API keys) and incremental for files of many
// gigabytes (the model store hashes what it downloads). The hex form is sha256sum's: 64 lowercase digits.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tern {

using Sha256 = std::array<uint8_t, 32>;

Sha256 sha256(std::string_view data);

class Sha256Hasher {
public:
    Sha256Hasher();
    ~Sha256Hasher();
    Sha256Hasher(const Sha256Hasher&) = delete;
    Sha256Hasher& operator=(const Sha256Hasher&) = delete;

    void update(const void* bytes, size_t size);
    Sha256 finish();  // the hasher starts over afterwards

private:
    struct Context;
    std::unique_ptr<Context> context_;
};

// The SHA-256 of a whole file, read in large blocks; an error names the file and what failed.
Result<Sha256> sha256_of_file(const std::string& path);

// 64 lowercase hex digits, as sha256sum prints them.
std::string to_hex(const Sha256& hash);
// "sha256:<64 hex digits>" or 64 hex digits, either case.
std::optional<Sha256> parse_sha256_hex(std::string_view text);

}  // namespace tern

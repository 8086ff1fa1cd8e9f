#include "base/sha256.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <vector>

#include <openssl/evp.h>

#include "base/check.h"

namespace tern {

struct Sha256Hasher::Context {
    EVP_MD_CTX* md = nullptr;
};

Sha256 sha256(std::string_view data) {
    Sha256 digest{};
    unsigned int size = 0;
    TERN_CHECK(EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(), nullptr) == 1 &&
               size == digest.size())
        << "SHA-256 failed";
    return digest;
}

Sha256Hasher::Sha256Hasher() : context_(std::make_unique<Context>()) {
    context_->md = EVP_MD_CTX_new();
    TERN_CHECK(context_->md != nullptr && EVP_DigestInit_ex(context_->md, EVP_sha256(), nullptr) == 1)
        << "SHA-256 init failed";
}

Sha256Hasher::~Sha256Hasher() { EVP_MD_CTX_free(context_->md); }

void Sha256Hasher::update(const void* bytes, size_t size) {
    TERN_CHECK(EVP_DigestUpdate(context_->md, bytes, size) == 1) << "SHA-256 update failed";
}

Sha256 Sha256Hasher::finish() {
    Sha256 digest{};
    unsigned int size = 0;
    TERN_CHECK(EVP_DigestFinal_ex(context_->md, digest.data(), &size) == 1 && size == digest.size())
        << "SHA-256 final failed";
    TERN_CHECK(EVP_DigestInit_ex(context_->md, EVP_sha256(), nullptr) == 1) << "SHA-256 init failed";
    return digest;
}

Result<Sha256> sha256_of_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return not_found("cannot open " + path + ": " + std::strerror(errno));
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    Sha256Hasher hasher;
    std::vector<char> buffer(size_t{4} << 20);
    for (;;) {
        const ssize_t count = ::read(fd, buffer.data(), buffer.size());
        if (count == 0) break;
        if (count < 0) {
            if (errno == EINTR) continue;
            const std::string reason = std::strerror(errno);
            ::close(fd);
            return internal_error("cannot read " + path + ": " + reason);
        }
        hasher.update(buffer.data(), static_cast<size_t>(count));
    }
    ::close(fd);
    return hasher.finish();
}

std::string to_hex(const Sha256& hash) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string hex;
    for (uint8_t byte : hash) {
        hex += kDigits[byte >> 4];
        hex += kDigits[byte & 15];
    }
    return hex;
}

std::optional<Sha256> parse_sha256_hex(std::string_view text) {
    if (text.substr(0, 7) == "sha256:") text.remove_prefix(7);
    if (text.size() != 64) return std::nullopt;
    Sha256 hash{};
    for (size_t idx = 0; idx < 32; ++idx) {
        unsigned value = 0;
        for (char c : text.substr(idx * 2, 2)) {
            const int digit = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                              : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                              : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                                          : -1;
            if (digit < 0) return std::nullopt;
            value = value * 16 + static_cast<unsigned>(digit);
        }
        hash[idx] = static_cast<uint8_t>(value);
    }
    return hash;
}

}  // namespace tern

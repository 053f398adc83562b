#pragma once
// What Sha256 and Md5 share: an incremental digest computed by OpenSSL's libcrypto (EVP interface),
// which picks the CPU's hash instructions (SHA extensions, AVX2) where there are any. The OpenSSL
// context stays behind this class, so no caller includes OpenSSL's headers.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX (openssl/types.h)

namespace revgraph::io {

class Digest {
public:
    // Copies continue independently from the state copied (EVP_MD_CTX_copy_ex), as the own
    // implementation's did: a prefix can be hashed once and finished in several ways.
    Digest(const Digest& other);
    Digest& operator=(const Digest& other);
    Digest(Digest&&) noexcept = default;
    Digest& operator=(Digest&&) noexcept = default;
    ~Digest() = default;

    // Adds size bytes; data may be null when size is 0 (an empty array may have no storage).
    void update(const void* data, std::size_t size);
    // The digest as lowercase hex; finalises: the object must not be updated after.
    std::string hex_digest();

protected:
    enum class Algorithm { sha256, md5 };
    explicit Digest(Algorithm algorithm);
    // The raw digest bytes; finalises like hex_digest().
    std::vector<std::uint8_t> finish();

private:
    struct FreeContext {
        void operator()(evp_md_ctx_st* ctx) const;
    };
    const char* name_;  // for error messages
    std::unique_ptr<evp_md_ctx_st, FreeContext> ctx_;
    bool finished_ = false;
};

}  // namespace revgraph::io

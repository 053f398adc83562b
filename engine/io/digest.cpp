// The EVP calls behind Digest: one context per object, initialised for its algorithm, fed by
// update(), finalised once. Any failure of libcrypto is an Error naming the algorithm.
#include "engine/io/digest.hpp"

#include <openssl/evp.h>

#include "engine/error.hpp"

namespace revgraph::io {

void Digest::FreeContext::operator()(evp_md_ctx_st* ctx) const { EVP_MD_CTX_free(ctx); }

Digest::Digest(Algorithm algorithm) : name_(algorithm == Algorithm::sha256 ? "sha256" : "md5"), ctx_(EVP_MD_CTX_new()) {
    const EVP_MD* md = algorithm == Algorithm::sha256 ? EVP_sha256() : EVP_md5();
    if (!ctx_ || md == nullptr || EVP_DigestInit_ex(ctx_.get(), md, nullptr) != 1)
        throw Error(std::string(name_) + ": libcrypto could not start a digest");
}

Digest::Digest(const Digest& other) : name_(other.name_), ctx_(EVP_MD_CTX_new()), finished_(other.finished_) {
    if (!ctx_ || EVP_MD_CTX_copy_ex(ctx_.get(), other.ctx_.get()) != 1)
        throw Error(std::string(name_) + ": libcrypto could not copy a digest");
}

Digest& Digest::operator=(const Digest& other) {
    if (this != &other) *this = Digest(other);
    return *this;
}

void Digest::update(const void* data, std::size_t size) {
    if (finished_) throw Error(std::string(name_) + ": update after the digest was taken");
    if (size == 0) return;
    if (data == nullptr) throw Error(std::string(name_) + ": null data with nonzero size");
    if (EVP_DigestUpdate(ctx_.get(), data, size) != 1) throw Error(std::string(name_) + ": libcrypto update failed");
}

std::vector<std::uint8_t> Digest::finish() {
    if (finished_) throw Error(std::string(name_) + ": the digest was already taken");
    finished_ = true;
    std::vector<std::uint8_t> out(EVP_MAX_MD_SIZE);
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), out.data(), &length) != 1)
        throw Error(std::string(name_) + ": libcrypto could not finish the digest");
    out.resize(length);
    return out;
}

std::string Digest::hex_digest() {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string s;
    for (const std::uint8_t byte : finish()) {
        s.push_back(kHex[byte >> 4]);
        s.push_back(kHex[byte & 15]);
    }
    return s;
}

}  // namespace revgraph::io

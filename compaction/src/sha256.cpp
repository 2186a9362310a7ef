// SHA-256 through OpenSSL's EVP interface; checked against the NIST vectors in
// tests/compaction/checkpoint_test.cpp.
#include "sha256.hpp"

#include <openssl/evp.h>

#include <new>
#include <utility>

namespace agentctx::compaction::detail {

namespace {

// Fetched once: an implicit fetch on every init costs a provider lookup per digest.
const EVP_MD* algorithm()
{
    static const EVP_MD* const md = [] {
        const EVP_MD* m = EVP_MD_fetch(nullptr, "SHA256", nullptr);
        return m ? m : EVP_sha256();
    }();
    return md;
}

EVP_MD_CTX* new_context()
{
    EVP_MD_CTX* c = EVP_MD_CTX_new();
    if (!c)
        throw std::bad_alloc();
    return c;
}

}  // namespace

sha256::sha256() : ctx_(new_context())
{
    if (EVP_DigestInit_ex(ctx_, algorithm(), nullptr) != 1)
    {
        EVP_MD_CTX_free(ctx_);
        throw std::bad_alloc();  // only an allocation inside the library can fail here
    }
}

sha256::~sha256()
{
    EVP_MD_CTX_free(ctx_);
}

sha256::sha256(const sha256& other) : ctx_(new_context())
{
    if (EVP_MD_CTX_copy_ex(ctx_, other.ctx_) != 1)
    {
        EVP_MD_CTX_free(ctx_);
        throw std::bad_alloc();
    }
}

sha256& sha256::operator=(const sha256& other)
{
    if (this != &other)
    {
        sha256 copy(other);
        std::swap(ctx_, copy.ctx_);
    }
    return *this;
}

sha256::sha256(sha256&& other) noexcept : ctx_(std::exchange(other.ctx_, nullptr)) {}

sha256& sha256::operator=(sha256&& other) noexcept
{
    std::swap(ctx_, other.ctx_);
    return *this;
}

void sha256::update(std::string_view bytes) noexcept
{
    if (!bytes.empty())
        EVP_DigestUpdate(ctx_, bytes.data(), bytes.size());
}

std::array<std::uint8_t, 32> sha256::finish() noexcept
{
    std::array<std::uint8_t, 32> out{};
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_, out.data(), &n);
    return out;
}

std::string sha256::hex() noexcept
{
    static constexpr char digits[] = "0123456789abcdef";
    const auto d = finish();
    std::string out(64, '0');
    for (std::size_t i = 0; i < d.size(); ++i)
    {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    return out;
}

}  // namespace agentctx::compaction::detail

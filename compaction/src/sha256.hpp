// SHA-256 through OpenSSL's libcrypto: the digests of portable checkpoints and progress records.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace agentctx::compaction::detail {

/// Incremental SHA-256 with value semantics (a copy continues independently, so a running state
/// can be remembered). update() any number of times, then finish() or hex() once.
class sha256
{
public:
    sha256();
    ~sha256();
    sha256(const sha256& other);
    sha256& operator=(const sha256& other);
    sha256(sha256&& other) noexcept;
    sha256& operator=(sha256&& other) noexcept;

    void update(std::string_view bytes) noexcept;
    std::array<std::uint8_t, 32> finish() noexcept;
    /// finish() as 64 lowercase hex characters.
    std::string hex() noexcept;

private:
    evp_md_ctx_st* ctx_ = nullptr;
};

}  // namespace agentctx::compaction::detail

// SHA-256 (FIPS 180-4), self-contained: the digests of portable checkpoints.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace agentctx::compaction::detail {

/// Incremental SHA-256. update() any number of times, then hex() once.
class sha256
{
public:
    sha256() noexcept;
    void update(std::string_view bytes) noexcept;
    std::array<std::uint8_t, 32> finish() noexcept;
    /// finish() as 64 lowercase hex characters.
    std::string hex() noexcept;

private:
    void block(const std::uint8_t* p) noexcept;

    std::array<std::uint32_t, 8> h_;
    std::array<std::uint8_t, 64> buf_{};
    std::size_t used_ = 0;
    std::uint64_t total_ = 0;
};

}  // namespace agentctx::compaction::detail

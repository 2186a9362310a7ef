// A vector stored in chunks: growing never moves what is stored (the session index).
#pragma once

#include <bit>
#include <cstddef>
#include <utility>
#include <vector>

namespace agentctx::compaction {

/// Indexable like a vector, but push_back never reallocates existing elements: a 100k-entry
/// index is built once in place instead of 1.5-2x of it being alive during each regrowth, then
/// copied into its final vector (that was most of a large load's peak memory and page faults).
/// The first chunks grow from `First` elements, doubling up to `Chunk`, then every chunk holds
/// `Chunk`: a small log (most open sessions) reserves for its few entries, not for 4,096.
template <class T, std::size_t Chunk = 4096, std::size_t First = 4>
class chunked_vector
{
    static_assert(std::has_single_bit(First) && std::has_single_bit(Chunk) && First <= Chunk);
    /// Elements held by the growing chunks together (First + 2·First + ... + Chunk/2).
    static constexpr std::size_t growing = Chunk - First;

public:
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    T& operator[](std::size_t i) { return at_place(i); }
    const T& operator[](std::size_t i) const { return const_cast<chunked_vector&>(*this).at_place(i); }
    const T& back() const { return parts_.back().back(); }

    void push_back(T v) { emplace_back() = std::move(v); }

    /// A new value-initialized element at the end, to fill in place.
    T& emplace_back()
    {
        if (parts_.empty() || parts_.back().size() == parts_.back().capacity())
            parts_.emplace_back().reserve(capacity_of(parts_.size() - 1));
        T& v = parts_.back().emplace_back();
        ++size_;
        return v;
    }

    /// Keeps the first `n` elements (n <= size()).
    void truncate(std::size_t n)
    {
        while (size_ > n)
        {
            parts_.back().pop_back();
            if (parts_.back().empty())
                parts_.pop_back();
            --size_;
        }
    }

private:
    static constexpr std::size_t capacity_of(std::size_t chunk) noexcept
    {
        const std::size_t doublings = std::bit_width(Chunk / First) - 1;
        return chunk < doublings ? First << chunk : Chunk;
    }

    T& at_place(std::size_t i)
    {
        if (i >= growing)
        {
            const std::size_t j = i - growing;
            return parts_[std::bit_width(Chunk / First) - 1 + j / Chunk][j % Chunk];
        }
        // Chunk k starts at First·(2^k − 1).
        const std::size_t k = std::bit_width(i / First + 1) - 1;
        return parts_[k][i - First * ((std::size_t{1} << k) - 1)];
    }

    std::vector<std::vector<T>> parts_;
    std::size_t size_ = 0;
};

}  // namespace agentctx::compaction

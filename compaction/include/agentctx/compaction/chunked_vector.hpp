// A vector stored in fixed-size chunks: growing never moves what is stored (the session index).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace agentctx::compaction {

/// Indexable like a vector, but push_back never reallocates existing elements: a 100k-entry
/// index is built once in place instead of 1.5-2x of it being alive during each regrowth, then
/// copied into its final vector (that was most of a large load's peak memory and page faults).
template <class T, std::size_t Chunk = 4096>
class chunked_vector
{
public:
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    T& operator[](std::size_t i) { return parts_[i / Chunk][i % Chunk]; }
    const T& operator[](std::size_t i) const { return parts_[i / Chunk][i % Chunk]; }
    const T& back() const { return parts_.back().back(); }

    void push_back(T v) { emplace_back() = std::move(v); }

    /// A new value-initialized element at the end, to fill in place.
    T& emplace_back()
    {
        if (parts_.empty() || parts_.back().size() == Chunk)
            parts_.emplace_back().reserve(Chunk);
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
    std::vector<std::vector<T>> parts_;
    std::size_t size_ = 0;
};

}  // namespace agentctx::compaction

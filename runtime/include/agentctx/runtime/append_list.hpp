// An append-only list whose versions share storage: O(1) appends, immutable snapshots.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace agentctx::runtime {

/// Each value of append_list is an immutable view of the first size() elements. push_back()
/// returns a longer view sharing the same chunks; it writes only slots that no existing view can
/// read, so readers on other threads never race with the single writer.
///
/// Precondition: push_back is called only on the newest version (the session's strand does this).
template <class T, std::size_t ChunkSize = 256>
class append_list
{
    struct chunk
    {
        std::array<T, ChunkSize> items{};
    };
    struct table
    {
        explicit table(std::size_t cap) : slots(new std::shared_ptr<chunk>[cap]), capacity(cap) {}
        std::unique_ptr<std::shared_ptr<chunk>[]> slots;
        std::size_t capacity;
    };

public:
    append_list() = default;

    static append_list from(std::vector<T> items)
    {
        append_list l;
        for (auto& v : items)
            l = l.push_back(std::move(v));
        return l;
    }

    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    const T& operator[](std::size_t i) const { return table_->slots[i / ChunkSize]->items[i % ChunkSize]; }
    const T& back() const { return (*this)[size_ - 1]; }

    append_list push_back(T v) const
    {
        const std::size_t c = size_ / ChunkSize;
        std::shared_ptr<table> t = table_;
        if (!t || c >= t->capacity)
        {
            // Grow into a new table; older views keep the old one alive. Amortized O(1).
            auto bigger = std::make_shared<table>(t ? t->capacity * 2 : 4);
            for (std::size_t i = 0; t && i < t->capacity; ++i)
                bigger->slots[i] = t->slots[i];
            t = std::move(bigger);
        }
        if (!t->slots[c])
            t->slots[c] = std::make_shared<chunk>();
        t->slots[c]->items[size_ % ChunkSize] = std::move(v);
        append_list out;
        out.table_ = std::move(t);
        out.size_ = size_ + 1;
        return out;
    }

    std::vector<T> to_vector() const
    {
        std::vector<T> v;
        v.reserve(size_);
        for (std::size_t i = 0; i < size_; ++i)
            v.push_back((*this)[i]);
        return v;
    }

private:
    std::shared_ptr<table> table_;
    std::size_t size_ = 0;
};

}  // namespace agentctx::runtime

// chunked_vector: growing chunks then fixed ones, indexing across every boundary, stable elements.
#include <agentctx/compaction/chunked_vector.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

using agentctx::compaction::chunked_vector;

TEST(chunked_vector, indexes_every_element_across_the_growing_and_the_fixed_chunks)
{
    chunked_vector<std::size_t, 64, 4> v;  // chunks of 4, 8, 16, 32, then 64 each
    std::vector<const std::size_t*> addresses;
    for (std::size_t i = 0; i < 1000; ++i)
    {
        v.emplace_back() = i;
        addresses.push_back(&v[i]);
    }
    ASSERT_EQ(v.size(), 1000u);
    for (std::size_t i = 0; i < 1000; ++i)
    {
        EXPECT_EQ(v[i], i) << i;
        EXPECT_EQ(&v[i], addresses[i]) << "element " << i << " moved";
    }
    EXPECT_EQ(v.back(), 999u);
}

TEST(chunked_vector, truncating_and_growing_again_keeps_the_layout)
{
    chunked_vector<int, 16, 2> v;
    for (int i = 0; i < 40; ++i)
        v.push_back(i);
    v.truncate(5);  // inside the third chunk (2, 4, 8)
    ASSERT_EQ(v.size(), 5u);
    for (int i = 5; i < 70; ++i)
        v.push_back(100 + i);
    for (int i = 0; i < 5; ++i)
        EXPECT_EQ(v[static_cast<std::size_t>(i)], i);
    for (int i = 5; i < 70; ++i)
        EXPECT_EQ(v[static_cast<std::size_t>(i)], 100 + i) << i;
    v.truncate(0);
    EXPECT_TRUE(v.empty());
    v.push_back(7);
    EXPECT_EQ(v[0], 7);
}

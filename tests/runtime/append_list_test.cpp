// append_list: versions share storage, and older versions never see later elements.
#include <agentctx/runtime/append_list.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

using agentctx::runtime::append_list;

TEST(append_list, versions_are_immutable_views)
{
    append_list<std::string, 4> a;
    std::vector<append_list<std::string, 4>> versions{a};
    for (int i = 0; i < 100; ++i)
        versions.push_back(versions.back().push_back(std::to_string(i)));
    for (std::size_t v = 0; v < versions.size(); ++v)
    {
        ASSERT_EQ(versions[v].size(), v);
        for (std::size_t i = 0; i < v; ++i)
            EXPECT_EQ(versions[v][i], std::to_string(i));
    }
    EXPECT_EQ(versions.back().back(), "99");
    EXPECT_EQ(versions.back().to_vector().size(), 100u);
    const auto from = append_list<int, 4>::from({1, 2, 3, 4, 5, 6});
    EXPECT_EQ(from.size(), 6u);
    EXPECT_EQ(from[5], 6);
}

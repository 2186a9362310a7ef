// Renders checkpoint sections as markdown and trims whole bullets until the text fits the cap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace agentctx::providers::offline {

struct section
{
    std::string title;
    std::vector<std::string> items;  // formatted lines
    std::string empty = "- (none)";
    bool newest_first = false;  // trimming drops from the back instead of the front
};

std::string render(const std::vector<section>& sections);

/// Drops whole bullets (oldest first, from the longest list other than the first section) until
/// chars/4 fits `cap`; if the bare skeleton is still over, cuts the text at a word boundary.
std::string fit(std::vector<section> sections, std::uint32_t cap);

}  // namespace agentctx::providers::offline

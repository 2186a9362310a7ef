// Hand-written transcripts for checkpoint-quality tests, each with the facts a checkpoint must keep.
#pragma once

#include "checkpoint_score.hpp"

#include <agentctx/compaction/message.hpp>

#include <boost/json/object.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace agentctx::test {

/// Builds a message list: user text, assistant text, tool calls and their results.
class convo
{
public:
    convo& user(std::string_view text);
    convo& say(std::string_view text);
    /// One assistant message with optional text and one tool call, then its result.
    convo& run(
        std::string_view name,
        boost::json::object args,
        std::string_view result,
        bool error = false,
        std::string_view text = {}
    );
    /// A tool call with no result yet.
    convo& call(std::string_view name, boost::json::object args, std::string_view text = {});

    std::vector<std::shared_ptr<const compaction::message>> messages;
    /// The same messages as Pi writes them (`{"role": …}` objects), for tests that append them to a session.
    std::vector<boost::json::object> objects;

private:
    void add(boost::json::object m);
    std::string next_id();
    int ids_ = 0;
};

struct quality_case
{
    std::string name;
    convo transcript;
    checkpoint_facts facts;
    std::optional<std::string> previous_summary = std::nullopt;
    std::uint32_t cap = 4000;
};

/// The eight-plus hand-written cases (bug fix, refactor, abandoned approach, …).
std::vector<quality_case> quality_cases();

}  // namespace agentctx::test

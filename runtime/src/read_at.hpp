// read_at: exactly `length` bytes at an offset of a descriptor (pread until done).
#pragma once

#include <agentctx/compaction/error.hpp>
#include <agentctx/runtime/error.hpp>

#include <cstdint>
#include <string>

namespace agentctx::runtime {

using compaction::diagnostics;
using compaction::result;

/// The bytes, or io_error when the descriptor fails or ends first.
result<std::string> read_at(int fd, std::uint64_t offset, std::size_t length);

}  // namespace agentctx::runtime

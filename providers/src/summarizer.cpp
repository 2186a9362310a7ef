// Anchors the summarizer interface's vtable in the providers library.
#include <agentctx/providers/summarizer.hpp>

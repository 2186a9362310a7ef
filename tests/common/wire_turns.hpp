// Test fixture: one conversation in each provider format (parallel calls, images, tool errors), for round
// trips.
#pragma once

#include <string_view>

namespace agentctx::test {

inline constexpr std::string_view chat_turns = R"([
  {"role":"user","content":"fix the build"},
  {"role":"user","content":[{"type":"text","text":"this one:"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0K"}}]},
  {"role":"assistant","content":"Reading both.","tool_calls":[
     {"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.cpp\"}"}},
     {"id":"call_2","type":"function","function":{"name":"bash","arguments":"{\"command\":\"make\",\"timeout\":30}"}}]},
  {"role":"tool","tool_call_id":"call_1","content":"int main() {}"},
  {"role":"tool","tool_call_id":"call_2","content":"error: make failed"},
  {"role":"assistant","content":null,"tool_calls":[
     {"id":"call_3","type":"function","function":{"name":"edit","arguments":"{}"}}]},
  {"role":"tool","tool_call_id":"call_3","content":"ok"},
  {"role":"assistant","content":"Fixed."}
])";

inline constexpr std::string_view responses_turns = R"([
  {"role":"user","content":[{"type":"input_text","text":"fix the build"},{"type":"input_image","image_url":"data:image/jpeg;base64,/9j/4A"}]},
  {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Reading both."}]},
  {"type":"function_call","call_id":"call_1","name":"read","arguments":"{\"path\":\"a.cpp\"}"},
  {"type":"function_call","call_id":"call_2","name":"bash","arguments":"{\"command\":\"make\"}"},
  {"type":"function_call_output","call_id":"call_1","output":"int main() {}"},
  {"type":"function_call_output","call_id":"call_2","output":"error: make failed"},
  {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Fixed."}]},
  {"role":"user","content":[{"type":"input_text","text":"thanks"}]}
])";

inline constexpr std::string_view anthropic_turns = R"([
  {"role":"user","content":[{"type":"text","text":"fix the build"},
     {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0K"}}]},
  {"role":"assistant","content":[{"type":"text","text":"Reading both."},
     {"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a.cpp"}},
     {"type":"tool_use","id":"toolu_2","name":"bash","input":{"command":"make","timeout":30}}]},
  {"role":"user","content":[
     {"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"int main() {}"}]},
     {"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"error: make failed"}],"is_error":true},
     {"type":"text","text":"and keep the tests green"}]},
  {"role":"assistant","content":[{"type":"text","text":"Fixed."}]}
])";

}  // namespace agentctx::test

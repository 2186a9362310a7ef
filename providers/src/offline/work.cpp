// Progress, blockers and critical context from tool calls and their results.
#include "facts.hpp"
#include "text.hpp"
#include "tools.hpp"

#include <algorithm>
#include <map>

namespace agentctx::providers::offline {

namespace {

struct round
{
    tool_call call;
    const part* result = nullptr;  // null: no result yet
    const part* said = nullptr;    // the assistant text just before the call
    std::size_t at = 0;            // index of the call's part
};

std::vector<round> rounds_of(const std::vector<part>& parts)
{
    std::vector<round> out;
    for (std::size_t i = 0; i < parts.size(); ++i)
    {
        if (parts[i].label != "Assistant tool calls")
            continue;
        const part* said = i > 0 && parts[i - 1].label == "Assistant" ? &parts[i - 1] : nullptr;
        for (std::size_t j = 0; j < parts[i].calls.size(); ++j)
        {
            const std::size_t r = i + 1 + j;
            const bool answered = r < parts.size() && parts[r].label == "Tool result";
            out.push_back({parts[i].calls[j], answered ? &parts[r] : nullptr, said, i});
        }
    }
    return out;
}

std::string first_sentence(const part* p)
{
    if (!p)
        return {};
    const auto s = sentences(p->text);
    return s.empty() || length(s.front()) > 160 ? std::string() : s.front();
}

std::string code(std::string_view s)
{
    std::string out(1, '`');
    out.append(clip_words(s, 160)).append(1, '`');
    return out;
}

// The state of one command key: its latest outcome.
struct outcome
{
    bool failed = false;
    bool check = false;
    std::string label;
    std::vector<std::string> errors;
    std::size_t order = 0;
    std::size_t at = 0;
};

struct tracker
{
    std::vector<std::string> inspected;
    std::size_t probes = 0;
    std::vector<std::pair<std::string, std::string>> edits;  // "Edited `path`", why
    std::map<std::string, outcome> outcomes;
    std::vector<std::string> paths, commands, errors;  // oldest first
    std::vector<std::string> pending;
    std::size_t order = 0;
    std::size_t last_switch = 0;  // part index of the latest "instead of …" change of approach
};

// The command without its last argument: `npm test -- a.ts` and `npm test -- b.ts` share a stem.
// A stem keeps at least two words, so `npm test` and `npm ci` stay apart.
std::string stem_of(const std::string& cmd)
{
    const auto sp = cmd.rfind(' ');
    if (sp == std::string::npos || cmd.substr(0, sp).find(' ') == std::string::npos)
        return cmd;
    return cmd.substr(0, sp);
}

// Keeps the newest command of each stem.
void add_command(std::vector<std::string>& commands, std::string cmd)
{
    const auto stem = stem_of(cmd);
    std::erase_if(commands, [&](const std::string& c) {
        return c == cmd || (stem != cmd && stem_of(c) == stem);
    });
    commands.push_back(std::move(cmd));
}

void note_edit(tracker& t, const round& r)
{
    const auto path = path_of(r.call);
    const auto verb = lower(r.call.name).find("write") != std::string::npos || lower(r.call.name) == "create"
                          ? "Wrote"
                          : "Edited";
    const std::string what = std::string(verb) + " " + code(path.empty() ? r.call.name : path);
    const auto why = first_sentence(r.said);
    auto it = std::find_if(t.edits.begin(), t.edits.end(), [&](const auto& e) { return e.first == what; });
    std::string keep_why = why.empty() && it != t.edits.end() ? it->second : why;
    if (it != t.edits.end())
        t.edits.erase(it);
    t.edits.emplace_back(what, keep_why);
}

// `git checkout -- a.ts` / `git restore a.ts`: the edits of a.ts are undone.
void note_revert(tracker& t, const std::string& cmd)
{
    std::vector<std::string> reverted;
    paths_in(cmd, reverted);
    for (const auto& p : reverted)
    {
        const auto edited = "Edited " + code(p), wrote = "Wrote " + code(p);
        std::erase_if(t.edits, [&](const auto& e) { return e.first == edited || e.first == wrote; });
        t.edits.emplace_back("Reverted " + code(p), "");
    }
}

void note_round(tracker& t, const round& r)
{
    const auto kind = kind_of(r.call);
    const auto cmd = command_of(r.call);
    const auto path = path_of(r.call);
    if (!path.empty() && kind != call_kind::probe)
        add_unique(t.paths, path, true);
    if (!cmd.empty() && kind == call_kind::probe)
        paths_in(cmd, t.inspected);
    if (kind == call_kind::probe)
    {
        ++t.probes;
        if (!path.empty())
            add_unique(t.inspected, path, true);
        return;
    }
    if (!cmd.empty())
        add_command(t.commands, clip_words(cmd, 200));
    if (r.result &&
        (cmd.find("git checkout -- ") != std::string::npos || cmd.find("git restore ") != std::string::npos))
        note_revert(t, cmd);
    if (!r.result)
    {
        t.pending.push_back(
            "- [ ] " + (cmd.empty() ? r.call.name + (path.empty() ? "" : " " + code(path)) : code(cmd))
        );
        return;
    }
    auto& o = t.outcomes[key_of(r.call)];
    o.failed = reports_failure(r.result->text);
    o.check = kind == call_kind::check;
    o.label = cmd.empty() ? r.call.name + (path.empty() ? "" : " " + code(path)) : code(cmd);
    o.errors = o.failed ? error_lines(r.result->text, 3) : std::vector<std::string>{};
    o.order = ++t.order;
    o.at = r.at;
    for (const auto& e : o.errors)
    {
        add_unique(t.errors, e, true);
        paths_in(e, t.paths);
    }
    if (kind == call_kind::edit && !o.failed)
        note_edit(t, r);
}

std::string inspected_line(const tracker& t)
{
    if (t.inspected.empty())
        return "- [x] Ran " + std::to_string(t.probes) + " read-only probe" + (t.probes == 1 ? "" : "s");
    std::string names;
    const std::size_t shown = std::min<std::size_t>(t.inspected.size(), 8);
    for (std::size_t i = 0; i < shown; ++i)
        names += (i ? ", " : "") + t.inspected[t.inspected.size() - shown + i];
    if (t.inspected.size() > shown)
        names += ", and " + std::to_string(t.inspected.size() - shown) + " more";
    const auto n = t.inspected.size();
    return "- [x] Inspected " + std::to_string(n) + (n == 1 ? " file: " : " files: ") + names;
}

// "- [x] `npm test -- …` passes for 13 targets: a, b, c, d, and 9 more" (labels are `cmd`).
std::string passing_group(const std::vector<std::string>& labels)
{
    const auto stem = stem_of(labels.front());
    std::string targets;
    const std::size_t shown = std::min<std::size_t>(labels.size(), 4);
    for (std::size_t i = labels.size() - shown; i < labels.size(); ++i)
    {
        auto target = labels[i].substr(stem.size() + 1);
        target.pop_back();  // the closing backtick
        targets += (targets.empty() ? "" : ", ") + target;
    }
    if (labels.size() > shown)
        targets += ", and " + std::to_string(labels.size() - shown) + " more";
    return "- [x] " + stem + " …` passes for " + std::to_string(labels.size()) + " targets: " + targets;
}

// A failed check is resolved by a later passing check, any failure by a later success of itself.
bool resolved(const tracker& t, const outcome& o)
{
    if (!o.failed)
        return true;
    return o.check && std::any_of(t.outcomes.begin(), t.outcomes.end(), [&](const auto& kv) {
               return kv.second.check && !kv.second.failed && kv.second.order > o.order;
           });
}

void progress(const tracker& t, work_facts& f)
{
    if (t.probes)
        f.done.push_back(inspected_line(t));
    for (const auto& [what, why] : t.edits)
        f.done.push_back("- [x] " + what + (why.empty() ? "" : ": " + why));
    std::vector<const outcome*> by_order;
    for (const auto& kv : t.outcomes)
        by_order.push_back(&kv.second);
    std::sort(by_order.begin(), by_order.end(), [](auto a, auto b) { return a->order < b->order; });
    std::map<std::string, std::vector<std::string>> passing;  // stem -> commands
    for (const auto* o : by_order)
        if (!o->failed && o->check)
            passing[stem_of(o->label)].push_back(o->label);
    for (const auto* o : by_order)
    {
        const auto& group = passing[stem_of(o->label)];
        if (!o->failed && o->check && group.size() >= 3)
        {
            if (group.back() == o->label)  // one line per group, where its last run was
                f.done.push_back(passing_group(group));
        }
        else if (!o->failed && o->check)
            f.done.push_back("- [x] " + o->label + " passes");
        else if (!o->failed && o->label.front() == '`' && o->label.find("git checkout -- ") == std::string::npos && o->label.find("git restore ") == std::string::npos)  // reverts have their own line
            f.done.push_back("- [x] Ran " + o->label);
        else if (!o->failed)
            continue;
        else if ((o->check ? resolved(t, *o) : true) && o->at < t.last_switch)
            f.done.push_back("- [x] Tried " + o->label + ": it failed, and the approach was changed");
        else if (!resolved(t, *o))
            f.blocked.push_back(
                "- " + o->label + " fails" + (o->errors.empty() ? "" : ": " + code(o->errors.front()))
            );
    }
    f.in_progress = t.pending;
}

// Errors of unresolved failures first, then other errors, commands, and files (inspected-only files last).
void critical(const tracker& t, work_facts& f)
{
    std::vector<std::string> open_errors;
    for (const auto& [key, o] : t.outcomes)
        if (!resolved(t, o))
            for (const auto& e : o.errors)
                open_errors.push_back(e);
    auto newest = [&](const std::vector<std::string>& v, std::size_t n, std::string_view prefix) {
        for (std::size_t i = 0; i < v.size() && n; ++i)
        {
            const auto item = std::string(prefix) + code(v[v.size() - 1 - i]);
            if (std::find(f.critical.begin(), f.critical.end(), item) == f.critical.end())
            {
                f.critical.push_back(item);
                --n;
            }
        }
    };
    newest(open_errors, 4, "- Error: ");
    newest(t.errors, 6 - std::min<std::size_t>(open_errors.size(), 4), "- Error: ");
    newest(t.commands, 6, "- Command: ");
    newest(t.paths, 10, "- File: ");
    std::vector<std::string> inspected_only;
    for (const auto& p : t.inspected)
        if (std::find(t.paths.begin(), t.paths.end(), p) == t.paths.end())
            inspected_only.push_back(p);
    newest(inspected_only, 4, "- File: ");
}

}  // namespace

work_facts extract_work(const std::vector<part>& parts, std::size_t since)
{
    work_facts f;
    tracker t;
    for (const auto& r : rounds_of(parts))
        note_round(t, r);
    t.last_switch = last_change_of_approach(parts);
    assistant_statements(parts, since, f);
    for (const auto& p : parts)
        if (p.label == "User" && !p.text.empty() && p.text.front() != '/')
            paths_in(p.text, t.paths);
    progress(t, f);
    critical(t, f);
    return f;
}

}  // namespace agentctx::providers::offline

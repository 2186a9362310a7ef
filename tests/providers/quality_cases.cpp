// The quality cases: realistic coding transcripts and the facts each checkpoint must and must not hold.
#include "quality_transcripts.hpp"

namespace agentctx::test {

namespace {

quality_case bug_fix()
{
    quality_case c{"bug fix", {}, {}};
    c.transcript.user("/model sonnet")
        .user("The LRU cache crashes when capacity is zero. Fix it in src/cache/lru.cpp. Don't change the "
              "public header include/cache/lru.hpp.")
        .run(
            "read",
            {{"path", "src/cache/lru.cpp"}},
            "int evict() { return items_.back(); }\nvoid put(K k) { if (size_ >= capacity_) evict(); }"
        )
        .run(
            "bash",
            {{"command", "ctest --test-dir build -R lru --output-on-failure"}},
            "1/1 Test #4: lru_test ....***Failed\nlru_test.cpp:42: Failure\nSegmentation fault (core dumped) "
            "in lru_cache::evict\nCommand exited with code 8",
            true
        )
        .say("The crash is evict() on an empty list. I'll use an early return in put() when capacity is zero "
             "instead of changing evict(), because the header must stay untouched.")
        .run(
            "edit",
            {{"path", "src/cache/lru.cpp"},
             {"oldText", "if (size_ >= capacity_)"},
             {"newText", "if (capacity_ == 0) return;\n    if (size_ >= capacity_)"}},
            "Successfully replaced text in src/cache/lru.cpp.",
            false,
            "Adding the guard for a zero capacity."
        )
        .run(
            "bash",
            {{"command", "ctest --test-dir build -R lru --output-on-failure"}},
            "100% tests passed, 0 tests failed out of 1"
        )
        .user("Good. Next add a regression test for capacity one in tests/lru_test.cpp.");
    c.facts.required = {
        {"goal", "capacity is zero"},
        {"goal", "src/cache/lru.cpp"},
        {"constraints", "Don't change the public header include/cache/lru.hpp."},
        {"decisions", "I'll use an early return in put() when capacity is zero instead of changing evict()"},
        {"unfinished", "regression test for capacity one"},
        {"done", "Edited `src/cache/lru.cpp`"},
        {"done", "passes"},
        {"paths", "tests/lru_test.cpp"},
        {"commands", "ctest --test-dir build -R lru --output-on-failure"},
        {"errors", "Segmentation fault (core dumped) in lru_cache::evict"}};
    c.facts.forbidden = {{"goal", "/model"}, {"blockers", "ctest"}, {"all", "\\n"}};
    return c;
}

quality_case refactor()
{
    quality_case c{"refactor", {}, {}};
    c.transcript
        .user("Split src/server.cpp into src/router.cpp and src/handlers.cpp. Keep every function under 40 "
              "lines. Only touch files under src/.")
        .run(
            "bash",
            {{"command", "wc -l src/server.cpp && grep -n \"case \" src/server.cpp | head -20"}},
            "612 src/server.cpp\n88:    case GET:\n97:    case POST:"
        )
        .run("read", {{"path", "src/server.cpp"}}, "// 612 lines of dispatch code")
        .say("Going with a handler table rather than the switch, because it keeps each handler small and "
             "testable.")
        .run(
            "write",
            {{"path", "src/router.cpp"},
             {"content",
              "#include \"router.hpp\"\n\nroute_table make_routes() {\n  return {{\"GET /\", "
              "&handle_index}};\n}\n"}},
            "Successfully wrote 142 bytes to src/router.cpp",
            false,
            "Creating the router with the route table."
        )
        .run(
            "write",
            {{"path", "src/handlers.cpp"},
             {"content", "void handle_index(request& r) {\n  r.reply(\"ok\");\n}\n"}},
            "Successfully wrote 96 bytes to src/handlers.cpp",
            false,
            "Moving the handlers out of the switch."
        )
        .run("bash", {{"command", "cmake --build build -j2"}}, "[100%] Built target server")
        .say("The build passes. Next, move the static file handler and delete the old switch from "
             "src/server.cpp.");
    c.facts.required = {
        {"goal", "Split src/server.cpp into src/router.cpp and src/handlers.cpp"},
        {"constraints", "Keep every function under 40 lines"},
        {"constraints", "Only touch files under src/"},
        {"decisions", "Going with a handler table rather than the switch"},
        {"unfinished", "move the static file handler"},
        {"done", "Wrote `src/router.cpp`"},
        {"done", "Wrote `src/handlers.cpp`"},
        {"done", "`cmake --build build -j2` passes"},
        {"paths", "src/handlers.cpp"},
        {"commands", "cmake --build build -j2"}};
    c.facts.forbidden = {{"done", "wc -l"}, {"all", "\\\""}, {"all", "\\n"}};
    return c;
}

quality_case abandoned_approach()
{
    quality_case c{"failed approach abandoned", {}, {}};
    c.transcript.user("Make the JSON loader in src/loader.cpp at least twice as fast on bench/big.json.")
        .say("I'll try simdjson first.")
        .run(
            "bash",
            {{"command", "cmake -S . -B build -DUSE_SIMDJSON=ON"}},
            "CMake Error at CMakeLists.txt:31 (find_package):\n  Could not find a package configuration file "
            "provided by \"simdjson\"",
            true
        )
        .say("simdjson is not installed and we cannot add dependencies, so instead of simdjson I'll use a "
             "single-pass parser with reserve().")
        .run(
            "edit",
            {{"path", "src/loader.cpp"}, {"oldText", "parse(text)"}, {"newText", "parse_single_pass(text)"}},
            "Successfully replaced text in src/loader.cpp.",
            false,
            "Switching the loader to the single-pass parser."
        )
        .run(
            "bash",
            {{"command", "./build/bench_loader bench/big.json"}},
            "before: 410 ms\nafter: 180 ms\nspeedup 2.3x"
        );
    c.facts.required = {
        {"goal", "twice as fast"},
        {"decisions", "instead of simdjson I'll use a single-pass parser with reserve()"},
        {"done", "Edited `src/loader.cpp`"},
        {"done", "it failed, and the approach was changed"},
        {"paths", "bench/big.json"},
        {"commands", "./build/bench_loader bench/big.json"},
        {"errors", "Could not find a package configuration file provided by"}};
    c.facts.forbidden = {{"blockers", "USE_SIMDJSON"}, {"decisions", "I'll try simdjson first"}};
    return c;
}

quality_case constraint_repeated()
{
    quality_case c{"constraint early and late", {}, {}};
    c.cap = 420;
    c.transcript.user(
        "Add pagination to GET /api/items in api/items.py. Never break the existing response shape."
    );
    for (int i = 0; i < 12; ++i)
        c.transcript.run("read", {{"path", "api/module" + std::to_string(i) + ".py"}}, "def handler(): pass");
    c.transcript
        .run(
            "edit",
            {{"path", "api/items.py"},
             {"oldText", "return items"},
             {"newText", "return items[offset:offset + limit]"}},
            "Successfully replaced text in api/items.py.",
            false,
            "Slicing the result with offset and limit."
        )
        .user("Remember: never break the existing response shape, clients depend on it. Also add a limit cap "
              "of 100.");
    c.facts.required = {
        {"goal", "pagination to GET /api/items"},
        {"constraints", "never break the existing response shape"},
        {"unfinished", "limit cap of 100"},
        {"done", "Edited `api/items.py`"}};
    c.facts.forbidden = {{"all", "api/module0.py"}};
    return c;
}

quality_case autonomous_loop()
{
    quality_case c{"long autonomous tool loop", {}, {}};
    c.transcript.user(
        "Find why test_orders_total fails and fix it. Use pytest only, do not run the full suite."
    );
    for (int i = 0; i < 15; ++i)
    {
        const auto f = "orders/part" + std::to_string(i) + ".py";
        c.transcript.run(
            "bash", {{"command", "grep -rn \"total\" " + f}}, f + ":3: total = sum(x.price for x in lines)"
        );
        c.transcript.run("read", {{"path", f}}, "def total(lines):\n    return sum(x.price for x in lines)");
    }
    c.transcript
        .run(
            "bash",
            {{"command", "pytest tests/test_orders.py::test_orders_total -q"}},
            "F\nE   AssertionError: assert 95 == 100\n1 failed in 0.12s",
            true
        )
        .say("The discount is applied twice. I decided to apply it once in orders/total.py rather than in "
             "every caller.")
        .run(
            "edit",
            {{"path", "orders/total.py"},
             {"oldText", "apply_discount(apply_discount(t))"},
             {"newText", "apply_discount(t)"}},
            "Successfully replaced text in orders/total.py.",
            false,
            "Removing the second discount."
        )
        .run("bash", {{"command", "pytest tests/test_orders.py::test_orders_total -q"}}, "1 passed in 0.10s")
        .run(
            "bash",
            {{"command", "pytest tests/test_refunds.py::test_refund_total -q"}},
            "F\nE   AssertionError: assert 90 == 100\n1 failed in 0.11s",
            true
        )
        .say("Then I will check whether refunds also apply the discount twice.");
    c.facts.required = {
        {"goal", "test_orders_total"},
        {"constraints", "do not run the full suite"},
        {"decisions", "I decided to apply it once in orders/total.py rather than in every caller"},
        {"done", "Inspected 15 files"},
        {"done", "Edited `orders/total.py`"},
        {"blockers", "pytest tests/test_refunds.py::test_refund_total -q"},
        {"unfinished", "refunds also apply the discount twice"},
        {"errors", "AssertionError: assert 90 == 100"},
        {"commands", "pytest tests/test_orders.py::test_orders_total -q"}};
    c.facts.forbidden = {{"done", "grep -rn"}, {"all", "Command: `grep"}, {"blockers", "test_orders_total"}};
    return c;
}

quality_case non_english()
{
    quality_case c{"non-English user", {}, {}};
    c.transcript
        .user("Bitte behebe den Fehler in src/datum.rs: das Datum wird im März falsch formatiert. Ändere "
              "niemals die öffentliche API.")
        .run(
            "read",
            {{"path", "src/datum.rs"}},
            "pub fn format(d: Date) -> String { format!(\"{}-{}\", d.month, d.day) }"
        )
        .run(
            "bash",
            {{"command", "cargo test datum"}},
            "test datum::maerz ... FAILED\nthread 'datum::maerz' panicked at 'assertion failed: left == "
            "right'",
            true
        )
        .say("I'll use zero-padded months instead of the raw number.")
        .run(
            "edit",
            {{"path", "src/datum.rs"}, {"oldText", "{}-{}"}, {"newText", "{:02}-{:02}"}},
            "Successfully replaced text in src/datum.rs."
        )
        .run("bash", {{"command", "cargo test datum"}}, "test result: ok. 3 passed; 0 failed")
        .user("Danke! Jetzt bitte noch die Dokumentation in README.md aktualisieren.");
    c.facts.required = {
        {"goal", "Fehler in src/datum.rs"},
        {"goal", "März"},
        {"constraints", "Ändere niemals die öffentliche API"},
        {"decisions", "zero-padded months instead of the raw number"},
        {"unfinished", "Dokumentation in README.md aktualisieren"},
        {"done", "`cargo test datum` passes"},
        {"commands", "cargo test datum"},
        {"errors", "panicked at 'assertion failed: left == right'"}};
    c.facts.forbidden = {{"blockers", "cargo test"}};
    return c;
}

quality_case secrets()
{
    quality_case c{"secrets present", {}, {}};
    c.transcript
        .user("Write scripts/deploy.sh to push the image to staging. Use the key "
              "sk-proj-Ab3dE5fG7hJ9kL1mN3pQ5rS7 for the staging API. Never print the key in logs.")
        .run(
            "bash",
            {{"command", "export GITHUB_TOKEN=ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 && gh auth status"}},
            "Logged in to github.com as deploy-bot\nAWS key in env: AKIAIOSFODNN7EXAMPLE"
        )
        .run(
            "write",
            {{"path", "scripts/deploy.sh"}, {"content", "#!/bin/sh\nset -eu\ndocker push \"$IMAGE\"\n"}},
            "Successfully wrote 40 bytes to scripts/deploy.sh",
            false,
            "Writing the deploy script that reads the key from the environment."
        )
        .run(
            "bash",
            {{"command", "sh -n scripts/deploy.sh && shellcheck scripts/deploy.sh"}},
            "In scripts/deploy.sh line 3: SC2086 error: Double quote to prevent globbing",
            true
        );
    c.facts.required = {
        {"goal", "scripts/deploy.sh"},
        {"constraints", "Never print the key in logs"},
        {"done", "Wrote `scripts/deploy.sh`"},
        {"blockers", "shellcheck scripts/deploy.sh"},
        {"errors", "SC2086 error: Double quote to prevent globbing"}};
    c.facts.forbidden = {
        {"all", "sk-proj-Ab3dE5fG7hJ9kL1mN3pQ5rS7"},
        {"all", "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"},
        {"all", "AKIAIOSFODNN7EXAMPLE"}};
    return c;
}

quality_case slash_first()
{
    quality_case c{"slash command first", {}, {}};
    c.transcript.user("/mode")
        .user("hi")
        .user("ok")
        .user("Add a --dry-run flag to tools/migrate.py that prints the SQL without executing it. Please "
              "keep the old flags working.")
        .run(
            "bash",
            {{"command", "ls tools && head -40 tools/migrate.py"}},
            "migrate.py\nseed.py\nimport argparse"
        )
        .say("I'll use argparse's store_true for --dry-run. Next, I will thread the flag through "
             "run_migrations().")
        .call(
            "edit",
            {{"path", "tools/migrate.py"},
             {"oldText", "parser.add_argument(\"--db\")"},
             {"newText",
              "parser.add_argument(\"--db\")\nparser.add_argument(\"--dry-run\", action=\"store_true\")"}}
        );
    c.facts.required = {
        {"goal", "--dry-run flag to tools/migrate.py"},
        {"constraints", "Please keep the old flags working"},
        {"decisions", "I'll use argparse's store_true for --dry-run"},
        {"unfinished", "thread the flag through run_migrations()"},
        {"unfinished", "edit `tools/migrate.py`"},
        {"done", "Inspected"},
        {"paths", "tools/migrate.py"}};
    c.facts.forbidden = {{"goal", "/mode"}, {"goal", "hi"}, {"all", "\\\""}};
    return c;
}

quality_case goal_redefined()
{
    quality_case c{"goal redefined", {}, {}};
    c.transcript.user("Add response caching to the HTTP fetcher in net/fetch.go.")
        .run(
            "read",
            {{"path", "net/fetch.go"}},
            "func Fetch(url string) ([]byte, error) { return http.Get(url) }"
        )
        .say("I'll use an LRU map keyed by URL.")
        .user("Actually, forget the caching. New task: add retries with exponential backoff to Fetch in "
              "net/fetch.go, at most 3 attempts.")
        .run(
            "edit",
            {{"path", "net/fetch.go"},
             {"oldText", "return http.Get(url)"},
             {"newText", "return withRetry(3, func() { return http.Get(url) })"}},
            "Successfully replaced text in net/fetch.go.",
            false,
            "Wrapping the call in withRetry."
        )
        .run(
            "bash",
            {{"command", "go test ./net/..."}},
            "--- FAIL: TestFetchRetry (0.00s)\n    fetch_test.go:31: expected 3 attempts, got 1\nFAIL",
            true
        );
    c.facts.required = {
        {"goal", "retries with exponential backoff"},
        {"goal", "at most 3 attempts"},
        {"blockers", "go test ./net/..."},
        {"errors", "fetch_test.go:31: expected 3 attempts, got 1"},
        {"done", "Edited `net/fetch.go`"},
        {"commands", "go test ./net/..."}};
    c.facts.forbidden = {{"goal", "caching"}, {"unfinished", "response caching"}, {"decisions", "LRU map"}};
    return c;
}

quality_case with_previous_summary()
{
    quality_case c{"update over a previous checkpoint", {}, {}};
    c.previous_summary =
        "## Goal\nMigrate the CLI from optparse to argparse in cli/main.py.\n\n## Constraints & Preferences\n"
        "- Python 3.8 must stay supported.\n\n## Progress\n### Done\n- [x] Ported the `init` subcommand\n\n"
        "### In Progress\n- [ ] (none)\n\n### Blocked\n- (none)\n\n## Key Decisions\n"
        "- **Use subparsers instead of one flat parser**\n\n## Next Steps\n1. Port `sync`.\n\n## Critical "
        "Context\n- (none)";
    c.transcript.user("Port the sync subcommand now.")
        .run(
            "edit",
            {{"path", "cli/main.py"},
             {"oldText", "opt.add_option('--sync')"},
             {"newText", "sub.add_parser('sync')"}},
            "Successfully replaced text in cli/main.py.",
            false,
            "Moving sync to a subparser."
        )
        .run("bash", {{"command", "python3.8 -m pytest tests/test_cli.py -q"}}, "4 passed in 0.3s");
    c.facts.required = {
        {"goal", "optparse to argparse"},
        {"constraints", "Python 3.8 must stay supported"},
        {"done", "Ported the `init` subcommand"},
        {"done", "Edited `cli/main.py`"},
        {"decisions", "subparsers instead of one flat parser"},
        {"unfinished", "Port the sync subcommand"},
        {"commands", "python3.8 -m pytest tests/test_cli.py -q"}};
    return c;
}

}  // namespace

std::vector<quality_case> quality_cases()
{
    return {
        bug_fix(),
        refactor(),
        abandoned_approach(),
        constraint_repeated(),
        autonomous_loop(),
        non_english(),
        secrets(),
        slash_first(),
        goal_redefined(),
        with_previous_summary()};
}

}  // namespace agentctx::test

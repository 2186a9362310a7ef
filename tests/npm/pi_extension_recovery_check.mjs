// Pi's own compactions through the extension in real Pi 1.6.0: overflow recovery (the faux model
// answers one request with a context-overflow error) and Pi's threshold compaction as the safety
// net (Pi's threshold set below agentctx's working budget) both reach `session_before_compact` and
// commit agentctx's plan and summary, and the session carries on. Settings come from Pi's settings
// file. Prints the figures as one JSON object; exit 0 = pass, 1 = a check failed.
//   node pi_extension_recovery_check.mjs --npm-cache DIR --agentctx BIN --extension DIR --work DIR
//        [--turns 80] [--overflow-at 40]
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const arg = {};
for (let i = 2; i < process.argv.length; i += 2) arg[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
const here = dirname(fileURLToPath(import.meta.url));
mkdirSync(arg.work, { recursive: true });

const overflowAt = Number(arg["overflow-at"] ?? 40);
const argv = [join(here, "pi_extension_run.mjs"), "--npm-cache", arg["npm-cache"], "--mode", "with",
  "--work", join(arg.work, "recovery"), "--turns", arg.turns ?? "80", "--per-prompt", "20", "--window", "200000",
  "--extension", arg.extension, "--agentctx", arg.agentctx, "--overflow-at", String(overflowAt),
  // Pi compacts at 40,000 tokens, before agentctx's working budget (100,000) or its clearing.
  "--pi-compaction", JSON.stringify({ reserveTokens: 160000 }),
  "--settings", JSON.stringify({ compaction: { workingBudget: 100000 } })];
const out = execFileSync(process.execPath, argv, { encoding: "utf8", maxBuffer: 1 << 28, stdio: ["ignore", "pipe", "pipe"] });
const { projection, file, ...r } = JSON.parse(out.trim().split("\n").at(-1));

const failures = [];
const check = (ok, what) => ok || failures.push(what);
check(r.errors.length === 0, `extension errors: ${JSON.stringify(r.errors)}`);
check(r.separatedToolCalls === 0, "a tool call was separated from its result in a request");
check(r.overflowedAt === overflowAt, `the model never answered with the overflow error (${r.overflowedAt})`);
check(r.hookCompactions.includes("overflow"), `overflow recovery did not compact through the advisor: ${JSON.stringify(r.hookCompactions)}`);
check(r.hookCompactions.includes("threshold"), `Pi's threshold compaction did not go through the advisor: ${JSON.stringify(r.hookCompactions)}`);
check(r.compactions >= 2 && r.extensionCompactions === r.compactions, `a compaction did not come from the advisor (${r.extensionCompactions} of ${r.compactions})`);
check(r.promptsAnswered === r.prompts && r.requests > r.overflowedAt, `the session did not continue after the overflow (${r.promptsAnswered} of ${r.prompts} prompts answered)`);
process.stdout.write(JSON.stringify({ recovery: r, failures }, null, 1) + "\n");
process.exit(failures.length ? 1 : 0);

// The Pi extension in real Pi 1.6.0: runs pi_extension_run.mjs without the extension, with it,
// and with a crashing and a garbage-speaking advisor, then checks what the issue asks for. Prints
// the figures as one JSON object; exit 0 = pass, 1 = a check failed.
//   node pi_extension_check.mjs --npm-cache DIR --agentctx BIN --extension DIR --work DIR
//        [--turns 300] [--per-prompt 20] [--window 200000] [--max-ratio 0.5] [--settings JSON]
//        [--manual-may-be-empty 1]
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const arg = {};
for (let i = 2; i < process.argv.length; i += 2) arg[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
const here = dirname(fileURLToPath(import.meta.url));
const work = arg.work;
mkdirSync(work, { recursive: true });

function run(mode, binary, name) {
  const argv = [join(here, "pi_extension_run.mjs"), "--npm-cache", arg["npm-cache"], "--mode", mode,
    "--work", join(work, name), "--turns", arg.turns ?? "300", "--per-prompt", arg["per-prompt"] ?? "20",
    "--window", arg.window ?? "200000", "--extension", arg.extension, "--agentctx", binary];
  if (arg.settings) argv.push("--settings", arg.settings);
  const out = execFileSync(process.execPath, argv, { encoding: "utf8", maxBuffer: 1 << 28, stdio: ["ignore", "pipe", "pipe"] });
  return JSON.parse(out.trim().split("\n").at(-1));
}

const garbage = join(work, "garbage-advisor.sh");
writeFileSync(garbage, "#!/bin/sh\necho 'this is not JSON'\nexec cat >/dev/null\n");
chmodSync(garbage, 0o755);

// Work folders of one length: the folder is in the system prompt, so in every request.
// An advisor whose every answer is a clearing of an entry that does not exist: Pi would refuse it
// (and drop every draft of the turn end with it), so the extension must never propose it.
const refused = join(work, "refused-advisor.sh");
writeFileSync(refused, `#!/bin/sh\nwhile read -r line; do echo '{"action":"clear","edits":[{"type":"context_edit","targetId":"no-such-entry","replacement":null}],"contextTokens":1,"threshold":2}'; done\n`);
chmodSync(refused, 0o755);

const pi = run("without", arg.agentctx, "pi-alone");
const ext = run("with", arg.agentctx, "agentctx");
const crash = run("with", "/bin/false", "crashing");
const junk = run("with", garbage, "garbaged");
const bogus = run("with", refused, "refusing");

const context = JSON.parse(execFileSync(arg.agentctx, ["context", ext.file, "--json"], { encoding: "utf8", maxBuffer: 1 << 28 }));
const ours = context.messages.map((m) => ({ role: m.role, entryId: m.entryId }));
// The settings reached the extension through Pi's settings file: each clearing leaves `keep` results.
const keep = JSON.parse(arg.settings ?? "{}").compaction?.clearToolResults?.keep ?? 3;
const ratio = ext.billedInput / pi.billedInput;
const failures = [];
const check = (ok, what) => ok || failures.push(what);
check(ext.errors.length === 0 && bogus.errors.length === 0, `extension errors: ${JSON.stringify([...ext.errors, ...bogus.errors])}`);
check(ext.separatedToolCalls === 0 && pi.separatedToolCalls === 0, "a tool call was separated from its result in a request");
check(JSON.stringify(ext.keptAfterClearing) === JSON.stringify([keep]), `clearing left ${JSON.stringify(ext.keptAfterClearing)} tool results, not the settings file's keep ${keep}`);
check(ext.extensionCompactions >= 1, "the extension committed no compaction");
check(ext.extensionCompactions === ext.proposed.commits, "a proposed compaction was not appended by Pi");
check(ext.contextEdits === ext.proposed.edits, "a proposed clearing edit was not appended by Pi");
check(ext.proposed.commitsWithoutWait >= ext.proposed.commits - 1, "a compaction after the first waited for the model");
check(JSON.stringify(ours) === JSON.stringify(ext.projection), "Pi's projection of the reloaded session differs from agentctx context");
// Pi itself refuses a `/compact` when nothing lies before its own cut (`keepRecentTokens`), before
// any extension hears of it: with --manual-may-be-empty 1 that refusal passes (a small context).
const refusedByPi = arg["manual-may-be-empty"] === "1" && ext.manualCompaction?.error === "Nothing to compact (session too small)";
check(refusedByPi || (ext.manualCompaction?.fromHook && ext.manualCompaction.reason === "manual"), `/compact did not go through the advisor: ${JSON.stringify(ext.manualCompaction)}`);
check(pi.manualCompaction && !pi.manualCompaction.fromHook && !pi.manualCompaction.error, "/compact failed in Pi alone");
check(ratio <= Number(arg["max-ratio"] ?? 0.5), `billed input ${ratio.toFixed(3)}x of Pi alone`);
// The status line: the context's size against the threshold at every turn end, then the reason of
// the last compaction once there is one, in the order the compactions were appended.
const shown = ext.statusLine.map((t) => /^agentctx (\d+)k\/(\d+)k(?:, last compaction (\w+))?$/.exec(t));
check(shown.length > ext.requests / 2 && shown.every(Boolean), `status line: ${JSON.stringify(ext.statusLine.slice(0, 3))}`);
if (shown.every(Boolean)) {
  const threshold = JSON.parse(arg.settings ?? "{}").compaction?.workingBudget ?? 60000;
  check(shown.every((m) => Number(m[2]) === Math.round(threshold / 1000)), "the status line does not show the working budget");
  check(new Set(shown.map((m) => m[1])).size > 10, "the status line's context size does not follow the context");
  const reasons = shown.map((m) => m[3]).filter((r, i, all) => r && r !== all[i - 1]);
  const appended = ext.compactionReasons.filter((r, i, all) => r !== all[i - 1]);
  check(!shown[0][3] && JSON.stringify(reasons) === JSON.stringify(appended),
    `the status line's last compactions ${JSON.stringify(reasons)} are not the file's ${JSON.stringify(appended)}`);
}
// A failing advisor is reported once, and only once, to the user.
for (const [name, r] of [["crash", crash], ["garbage", junk], ["refused-draft", bogus]])
  check(r.notices.length === 1 && r.notices[0].message.startsWith("agentctx:") && (r === bogus || r.statusLine.length === 0),
    `a ${name} advisor was reported ${r.notices.length} times: ${JSON.stringify(r.notices.slice(0, 2))}`);
for (const [name, r] of [["crash", crash], ["garbage", junk], ["refused-draft", bogus]])
  check(r.requests === pi.requests && r.billedInput === pi.billedInput && r.compactions === pi.compactions &&
        r.contextEdits === 0, `with a ${name} advisor the session differs from Pi alone`);
const strip = ({ projection, file, statusLine, ...r }) => ({ ...r, statusLines: statusLine.length, lastStatus: statusLine.at(-1) ?? null });
process.stdout.write(JSON.stringify({ ratio, pi: strip(pi), agentctx: strip(ext), crash: strip(crash), garbage: strip(junk), refused: strip(bogus), failures }, null, 1) + "\n");
process.exit(failures.length ? 1 : 0);

// Pi 1.6.0 doing what `agentctx plan --json` / `agentctx context --json` do (for side-by-side timing only;
// no test depends on it): node pi_resume_plan.mjs PI_DIR plan|context SESSION.jsonl
// PI_DIR is an npm install of @earendil-works/pi-coding-agent 1.6.0. Pi may repair the file (a
// missing final newline): pass a copy. Time the whole process: /usr/bin/time -v node ...
import { join } from "path";

const [piDir, mode, file] = process.argv.slice(2);
const core = join(piDir, "node_modules/@earendil-works/pi-coding-agent/dist/core");
const sm = await import(join(core, "session-manager.js"));
const comp = await import(join(core, "compaction/compaction.js"));
const utils = await import(join(core, "compaction/utils.js"));
const msgs = await import(join(core, "messages.js"));

// Resume: Pi's own session open (streams the file, builds every entry and the id map).
const mgr = sm.SessionManager.open(file);
const path = mgr.getBranch();
const proj = mgr.buildSessionProjection();
const est = comp.estimateProjectedContextTokens(proj, path);
const messages = proj.entries.flatMap((pe) =>
  pe.messages.map((m) => ({ role: m.role, entryId: pe.sourceEntry.id, tokens: comp.estimateTokens(m) })));
const out = { leafId: mgr.getLeafId(), context: { messages, estimatedTokens: est.tokens } };
if (mode === "plan") {
  const prep = comp.prepareCompaction(path, { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000 });
  if (prep) {
    const lists = utils.computeFileLists(prep.fileOps);
    out.plan = {
      firstKeptEntryId: prep.firstKeptEntryId, isSplitTurn: prep.isSplitTurn, tokensBefore: prep.tokensBefore,
      readFiles: lists.readFiles, modifiedFiles: lists.modifiedFiles,
      serializedHistory: utils.serializeConversation(msgs.convertToLlm(prep.messagesToSummarize)),
      serializedTurnPrefix: utils.serializeConversation(msgs.convertToLlm(prep.turnPrefixMessages)),
    };
  } else out.plan = null;
}
process.stdout.write(JSON.stringify(out) + "\n");

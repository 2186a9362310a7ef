// The agentctx subcommands; each returns a documented exit code.
#pragma once

namespace agentctx::cli {

int cmd_context(int argc, char** argv);
int cmd_plan(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_compact(int argc, char** argv);
int cmd_migrate(int argc, char** argv);
int cmd_checkpoint(int argc, char** argv);
int cmd_verify(int argc, char** argv);
int cmd_recover(int argc, char** argv);
int cmd_simulate(int argc, char** argv);
int cmd_probe(int argc, char** argv);
int cmd_advise(int argc, char** argv);

}  // namespace agentctx::cli

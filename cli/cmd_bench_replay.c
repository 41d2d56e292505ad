/* syncsim bench replay: replay at scale, and against SMPI (traces/replay_bench.c). */
#include "cli/commands.h"
#include "cli/options.h"
#include "traces/replay_command.h"

int cmd_bench_replay(const run_config *cfg) {
    run_request rq = {.cfg = cfg, .was_set = options_was_set};
    return replay_bench(&rq, stdout);
}

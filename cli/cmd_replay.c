/* syncsim replay: trace-driven replay of a recorded run, of a model profile or of a real log
 * (traces/replay_command.h does the work). */
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/outputs.h"
#include "traces/replay_command.h"

int cmd_replay(const run_config *cfg) {
    run_request rq;
    outputs_request(CMD_REPLAY, cfg, 0, &rq);
    int rc = replay_command(&rq);
    outputs_request_free(&rq);
    return rc;
}

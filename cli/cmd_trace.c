/* syncsim trace: check and summarize a trace, or convert a real per-step log into one. */
#include "cli/commands.h"
#include "cli/options.h"
#include "common/afile.h"
#include "common/outputs.h"
#include "common/status.h"
#include "traces/replay_command.h"

int cmd_trace(const run_config *cfg) {
    if (!cfg->replay_trace[0] && !cfg->replay_import[0])
        return ss_error_set(SS_EUSAGE, "trace needs --trace FILE (check and summarize it) or "
                                       "--import CSV (convert a real log into OUT/steps.trace)");
    run_request rq = {.cfg = cfg, .was_set = options_was_set};
    trace *t = NULL;
    int rc = replay_build_trace(&rq, &t);
    if (rc != SS_OK) {
        trace_free(t);
        return rc;
    }
    replay_trace_describe(t, cfg->replay_trace[0] ? cfg->replay_trace : cfg->replay_import, stdout);
    if (cfg->replay_import[0] && (rc = ss_mkdir_p(cfg->out_dir)) == SS_OK) {
        /* write the imported log as a trace file */
        char path[1024];
        outputs_path(cfg, "steps.trace", path, sizeof path);
        if ((rc = replay_trace_save(t, path)) == SS_OK) printf("wrote %s\n", path);
    }
    trace_free(t);
    return rc;
}

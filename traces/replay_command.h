/* The drivers of `syncsim replay`, `syncsim trace` and `syncsim bench replay`: everything between
 * the resolved options and the replay runner (traces/replay.h). Options not given come from the
 * trace (rq->was_set tells which were), so a replay of a recorded run reruns it as recorded.
 *
 *     run_request rq = {.cfg = &cfg, .config_ini = ini, .was_set = options_was_set};
 *     int rc = replay_command(&rq);    // once per process: it starts SimGrid
 */
#ifndef SS_TRACES_REPLAY_COMMAND_H
#define SS_TRACES_REPLAY_COMMAND_H

#include "common/run_request.h"
#include "traces/trace.h"

#include <stdio.h>

/* The trace the options describe: loaded (--trace), imported from a real log (--import, the
 * model size from --param-bytes or --profile) or synthesized from a model profile (--profile;
 * SelSync's decisions from --decisions or drawn with --sync-fraction). */
int replay_build_trace(const run_request *rq, trace **out);

/* syncsim replay: builds the trace, resolves the platform (--platform, the recorded one, or
 * generated from the options given, else recorded, else defaults), replays it and writes
 * OUT/{config.ini, platform.xml if generated, steps.trace with --record, summary.json}; prints
 * the result and, for the same run on the same cluster, the recorded simulated time. */
int replay_command(const run_request *rq);

/* syncsim trace: a summary of a trace (version, source, policy, sizes, mean costs); and a trace
 * written as a trace file (an imported log), atomically. */
void replay_trace_describe(const trace *t, const char *name, FILE *out);
int replay_trace_save(const trace *t, const char *path);

/* syncsim bench replay (traces/replay_bench.c): BSP replays of a profile (--profile, default
 * resnet101) for --sizes workers, and the message-level ring against SMPI's all-reduce. */
int replay_bench(const run_request *rq, FILE *out);

#endif

/* libFuzzer target: the sweep-file reader (sweep_plan_load_mem, which sweep_plan_load shares all
 * but the reading with, and the command line's option checks) on arbitrary bytes: a status for
 * every input (a plan whose points each carry their arguments, or an error with a message),
 * never a crash or a leak. Run: fuzz_sweep -max_total_time=60 fuzz/corpus_sweep */
#include "analysis/sweep.h"
#include "cli/commands.h"
#include "common/status.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sweep_plan *p = NULL;
    int rc = sweep_plan_load_mem("fuzz.ini", (const char *)data, size,
                                 "/tmp/syncsim-fuzz-sweep-out", cmd_sweep_options(), &p);
    if (rc == SS_OK) {
        if (!p || p->n_points < 1) __builtin_trap();
        for (int i = 0; i < p->n_points; i++)
            if (p->points[i].argc < 0 || !p->points[i].name[0]) __builtin_trap();
    } else if (p != NULL || !ss_error_message()[0]) {
        __builtin_trap();
    }
    sweep_plan_free(p);
    return 0;
}

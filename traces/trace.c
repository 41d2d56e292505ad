/* The in-memory trace (trace.h): allocation, the per-step summary of its cells, accessors. Its
 * writer, readers and the CSV import are trace_write.c, trace_read.c, trace_stream.c and
 * trace_import.c. */
#include "traces/trace_internal.h"
#include "common/status.h"

#include <stdlib.h>
#include <string.h>

int trace_alloc(const policy_config *pc, int workers, long steps, trace **out) {
    *out = NULL;
    if (workers < 1 || workers > TRACE_MAX_WORKERS || steps < 1 ||
        (double)workers * (double)steps > (double)TRACE_MAX_CELLS)
        return ss_error_set(SS_EUSAGE,
                            "a trace of %d workers x %ld steps is outside what fits in memory "
                            "(at most %ld worker steps)",
                            workers, steps, (long)TRACE_MAX_CELLS);
    trace *t = ss_calloc(1, sizeof *t);
    t->version = TRACE_VERSION;
    t->pc = *pc;
    t->workers = workers;
    t->steps = steps;
    t->sim_time_s = -1;
    size_t n = (size_t)workers * (size_t)steps;
    t->cells = ss_calloc(n, sizeof *t->cells);
    t->decisions = ss_malloc((size_t)steps);
    memset(t->decisions, -1, (size_t)steps);
    *out = t;
    return SS_OK;
}

void trace_finish(trace *t) {
    t->records = 0;
    t->steps_done = 0;
    int complete = 1;
    for (long s = 1; s <= t->steps; s++) {
        int8_t d = -1;
        int all = 1;
        for (int w = 0; w < t->workers; w++) {
            const trace_cell *c = trace_cell_at(t, s, w);
            if (!c->recorded) {
                all = 0;
                continue;
            }
            t->records++;
            if (c->decision > d) d = c->decision;
        }
        t->decisions[s - 1] = d;
        if (complete && all)
            t->steps_done = s;
        else
            complete = 0;
    }
}

void trace_free(trace *t) {
    if (!t) return;
    free(t->cells);
    free(t->decisions);
    free(t->config);
    free(t->slowdown);
    free(t->layers);
    free(t);
}

const char *trace_config_get(const trace *t, const char *key) {
    for (int i = t->n_config - 1; i >= 0; i--) /* the last line of a key wins */
        if (!strcmp(t->config[i].key, key)) return t->config[i].value;
    return NULL;
}

double trace_sync_fraction(const trace *t) {
    long n = 0, sync = 0;
    for (long s = 0; s < t->steps; s++)
        if (t->decisions[s] >= 0) {
            n++;
            sync += t->decisions[s];
        }
    return n ? (double)sync / (double)n : 0.0;
}

/* libFuzzer target: the step-trace reader (trace_read) on arbitrary bytes. It must return a
 * status for every input (SS_OK or SS_EINPUT/SS_EUSAGE with a message), never crash, leak or
 * read out of bounds. Build: cmake -DCMAKE_C_COMPILER=clang -DSYNCSIM_FUZZ=ON; run:
 *     fuzz_trace -max_total_time=60 traces/fuzz/corpus_trace */
#include "common/status.h"
#include "traces/trace.h"

#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0; /* fmemopen refuses an empty buffer */
    FILE *fp = fmemopen((void *)data, size, "r");
    if (!fp) return 0;
    trace *t = NULL;
    int rc = trace_read(fp, "fuzz.trace", &t);
    fclose(fp);
    if (rc == SS_OK) {
        /* a trace that reads back is consistent */
        if (t->steps_done > t->steps || t->records > (long)t->workers * t->steps) __builtin_trap();
        (void)trace_sync_fraction(t);
    } else if (t != NULL || !ss_error_message()[0]) {
        __builtin_trap();
    }
    trace_free(t);
    return 0;
}

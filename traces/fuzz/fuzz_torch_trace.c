/* libFuzzer target: `profile import` of a torch.profiler Chrome trace (profile_import.h) on
 * arbitrary bytes: a status for every input, never a crash, and a profile it accepts is one a
 * replay can time. The bytes up to the first NUL are the trace; those after it, if any, the
 * companion params file. Run: fuzz_torch_trace -max_total_time=60 traces/fuzz/corpus_torch_trace */
#include "common/status.h"
#include "tests/fuzz/fuzz_file.h"
#include "traces/profile_import.h"

#include <math.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, '\0', size);
    const size_t trace_bytes = nul ? (size_t)(nul - data) : size;
    const char *trace = fuzz_file_write_n(0, data, trace_bytes);
    const char *params = nul ? fuzz_file_write_n(1, nul + 1, size - trace_bytes - 1) : NULL;
    if (!trace || (nul && !params)) return 0;
    /* without a params file the batch comes from the options */
    const profile_import_opts o = {.trace_path = trace, .params_path = params, .batch = 8};
    model_profile p;
    char notes[2048];
    int rc = profile_import(&o, &p, notes, sizeof notes);
    if (rc != SS_OK) {
        if (!ss_error_message()[0]) __builtin_trap();
        return 0;
    }
    if (!(p.layers > 0) || !(p.measured_step_s > 0) || !isfinite(p.measured_step_s) ||
        !(p.measured_gap_s >= 0) || !isfinite(p.measured_gap_s))
        __builtin_trap();
    profile_free(&p);
    return 0;
}

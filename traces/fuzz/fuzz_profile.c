/* libFuzzer target: the model-profile reader (profile_read) on arbitrary bytes: a status for
 * every input, never a crash. Run: fuzz_profile -max_total_time=60 traces/fuzz/corpus_profile */
#include "common/status.h"
#include "traces/profile.h"

#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    FILE *fp = fmemopen((void *)data, size, "r");
    if (!fp) return 0;
    model_profile p;
    int rc = profile_read(fp, "fuzz.profile", &p);
    fclose(fp);
    if (rc == SS_OK && !(p.params > 0 && p.forward_flops_per_sample >= 0)) __builtin_trap();
    if (rc != SS_OK && !ss_error_message()[0]) __builtin_trap();
    profile_free(&p);
    return 0;
}

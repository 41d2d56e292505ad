/* libFuzzer target: the CSV importer of real logs (trace_import_csv_stream) on arbitrary bytes.
 * Run: fuzz_csv -max_total_time=60 traces/fuzz/corpus_csv */
#include "common/status.h"
#include "traces/trace.h"

#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    FILE *fp = fmemopen((void *)data, size, "r");
    if (!fp) return 0;
    policy_config pc;
    policy_config_default(&pc);
    trace *t = NULL;
    int rc = trace_import_csv_stream(fp, "fuzz.csv", &pc, 4e6, &t);
    fclose(fp);
    if (rc == SS_OK && (t->steps_done < 1 || t->pc.steps != t->steps_done)) __builtin_trap();
    if (rc != SS_OK && (t != NULL || !ss_error_message()[0])) __builtin_trap();
    trace_free(t);
    return 0;
}

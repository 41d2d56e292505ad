/* libFuzzer target: the Chakra execution-trace import (chakra_import.h) on arbitrary bytes, as the
 * binary form, or as the JSON form where the bytes parse as JSON: a status for every input, never
 * a crash. Run: fuzz_chakra -max_total_time=60 traces/fuzz/corpus_chakra */
#include "common/status.h"
#include "traces/chakra_import.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const profile_import_opts o = {.trace_path = "fuzz.et", .batch = 32};
    model_profile p;
    char notes[2048];
    int rc;
    if (chakra_is_binary(data, size))
        rc = chakra_import_binary(&o, data, size, 0, &p, notes, sizeof notes);
    else {
        char *text = malloc(size + 1); /* cJSON reads up to a NUL */
        if (!text) return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        cJSON *root = cJSON_Parse(text);
        free(text);
        if (!root) return 0;
        rc = chakra_is_json(root) ? chakra_import_json(&o, root, 0, &p, notes, sizeof notes) : -1;
        cJSON_Delete(root);
        if (rc == -1) return 0;
    }
    if (rc == SS_OK) {
        if (!(p.params > 0 && p.layers > 0 && p.measured_step_s >= 0)) __builtin_trap();
        profile_free(&p);
    } else if (!ss_error_message()[0])
        __builtin_trap();
    return 0;
}

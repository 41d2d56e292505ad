/* libFuzzer target: the --config INI reader of the option table (options_parse with
 * `--config FILE`, as `syncsim train` reads a run's config.ini) on arbitrary bytes: a status for
 * every input, never a crash or a leak. Run: fuzz_config -max_total_time=60 fuzz/corpus_config */
#include "cli/options.h"
#include "common/status.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file_write(data, size);
    if (!path) return 0;
    char *argv[] = {"--config", (char *)path, NULL};
    run_config cfg;
    int rc = options_parse(CMD_TRAIN, 2, argv, &cfg);
    if (rc != SS_OK && !ss_error_message()[0]) __builtin_trap();
    return 0;
}

/* libFuzzer target: the nccl-tests log reader of `calibrate network` (calib_log_parse) on
 * arbitrary bytes: a status for every input, never a crash, and a log it accepts is one the fit
 * can use. An input whose first line starts with '@' gives that line (up to 40 bytes) as the
 * PATH@NxG suffix, the rest as the file. Run: fuzz_nccl_log -max_total_time=60
 * tests/fuzz/corpus_nccl_log */
#include "cli/calibrate_network.h"
#include "common/status.h"
#include "tests/fuzz/fuzz_file.h"

#include <math.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char suffix[48] = "";
    if (size > 0 && data[0] == '@') {
        const uint8_t *nl = memchr(data, '\n', size < 41 ? size : 41);
        if (!nl) return 0;
        memcpy(suffix, data, (size_t)(nl - data));
        suffix[nl - data] = '\0';
        if (strlen(suffix) != (size_t)(nl - data)) return 0; /* a NUL inside */
        size -= (size_t)(nl - data) + 1;
        data = nl + 1;
    }
    const char *path = fuzz_file_write(data, size);
    if (!path) return 0;
    char arg[160];
    snprintf(arg, sizeof arg, "%s%s", path, suffix);
    static calib_log log; /* 3 KiB of rows: not on libFuzzer's stack */
    int rc = calib_log_parse(arg, &log);
    if (rc != SS_OK) {
        if (!ss_error_message()[0]) __builtin_trap();
        return 0;
    }
    if (log.n < 1 || log.n > CALIB_MAX_SIZES || log.ranks < 1 || log.nodes < 1 ||
        log.gpus_per_node < 1 || log.nodes * log.gpus_per_node != log.ranks)
        __builtin_trap();
    for (int i = 0; i < log.n; i++)
        if (!(log.size_bytes[i] > 0) || !isfinite(log.size_bytes[i]) || !(log.time_us[i] > 0) ||
            !isfinite(log.time_us[i]))
            __builtin_trap();
    return 0;
}

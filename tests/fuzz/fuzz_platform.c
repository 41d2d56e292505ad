/* libFuzzer target: the platform checker on arbitrary bytes, through sim_platform_check_mem (all
 * of sim_platform_check but the reading of the file). It must return a status for every input
 * (SS_OK with a consistent host list, or an error with a message), never crash, leak or read out
 * of bounds. Run: fuzz_platform -max_total_time=60 fuzz/corpus_platform */
#include "common/status.h"
#include "sim/net/cluster.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sim_platform_info info;
    int rc = sim_platform_check_mem("fuzz.xml", (const char *)data, size, &info);
    if (rc == SS_OK) {
        if (info.n_hosts < 1 || info.n_ps_hosts < 0 || info.n_ps_hosts > info.n_hosts)
            __builtin_trap();
        for (int i = 0; i < info.n_hosts; i++)
            if (!info.host_names[i] || !info.host_names[i][0]) __builtin_trap();
    } else if (!ss_error_message()[0]) {
        __builtin_trap();
    }
    sim_platform_info_free(&info);
    return 0;
}

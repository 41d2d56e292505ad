/* CUnit suite of the memory estimate on a GPU (emu/memory.h): the replicas are checked against
 * the GPU's free memory, a run that cannot fit is refused with the estimate and the largest
 * worker count that fits, and that count does fit. Without a usable GPU the program says so on
 * one line and exits 77 (ctest: skipped). */
#include "common/status.h"
#include "emu/memory.h"
#include "kernels/device.h"
#include "kernels/model.h"
#include "ss_test.h"

#include <stdlib.h>
#include <string.h>

static void test_refused_with_largest_count(void) {
    device *dev;
    char notice[256];
    CU_ASSERT_FATAL(device_open("cuda", &dev, notice, sizeof notice) == SS_OK);
    double free_bytes, total_bytes;
    CU_ASSERT_FATAL(device_memory_info(dev, &free_bytes, &total_bytes) == 1);
    CU_ASSERT(free_bytes > 0 && free_bytes <= total_bytes);
    model_spec spec;
    CU_ASSERT_FATAL(model_spec_parse(&spec, "resnet:20", 1, 28, 28, 10) == SS_OK);
    char line[160] = "";
    CU_ASSERT_EQUAL(memory_check_run(dev, &spec, 2, 2, 64, 2, 2, line, sizeof line), SS_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "of the GPU's"));
    /* far more replicas than any GPU holds at batch 512; the host's memory set out of the way,
     * so that the GPU's is what refuses (a host short of memory refuses first, without the GPU's
     * figures) */
    setenv("SYNCSIM_MEMORY_LIMIT", "1000TB", 1);
    int rc = memory_check_run(dev, &spec, 100000, 2, 512, 2, 2, NULL, 0);
    CU_ASSERT_EQUAL(rc, SS_ENOMEM);
    const char *msg = ss_error_message();
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "of GPU memory"));
    const char *at = strstr(msg, "at most ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    const int most = atoi(at + strlen("at most "));
    CU_ASSERT(most >= 1 && most < 100000);
    CU_ASSERT_EQUAL(memory_check_run(dev, &spec, most, 2, 512, 2, 2, NULL, 0), SS_OK);
    CU_ASSERT_EQUAL(memory_check_run(dev, &spec, most + 2, 2, 512, 2, 2, NULL, 0), SS_ENOMEM);
    device_close(dev);
}

static CU_TestInfo tests[] = {
    {"a run too large for the GPU: refused, with the largest count that fits",
     test_refused_with_largest_count},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"memory on a GPU", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    char reason[256];
    if (!device_cuda_available(reason, sizeof reason)) {
        printf("test_gpu_memory: SKIPPED: %s\n", reason);
        return 77;
    }
    return ss_test_main(suites);
}

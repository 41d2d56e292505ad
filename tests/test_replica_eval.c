/* CUnit suite of the mean of the replicas' own test accuracies (em_jobs_accuracy_mean): replicas
 * that hold the same bits are evaluated once, and the mean is what evaluating every replica
 * gives, on one thread and on several. A replica that differs only in its last parameter (a
 * class's bias), or only in a buffer (batch norm's running statistics), is not taken for its
 * twin. */
#include "common/status.h"
#include "emu/dataset.h"
#include "emu/emulation_jobs.h"
#include "kernels/device.h"
#include "kernels/model.h"
#include "ss_test.h"

#include <stdlib.h>
#include <string.h>

enum { REPLICAS = 5 };

static double accuracy_of(model *m, const dataset *test) {
    double loss;
    size_t correct;
    model_evaluate(m, test->x, test->y, test->n, &loss, &correct);
    return (double)correct / (double)test->n;
}

static void accuracy_mean_case(const char *model_name, int threads) {
    device *dev;
    char notice[256];
    CU_ASSERT_FATAL(device_open("cpu", &dev, notice, sizeof notice) == SS_OK);
    synthetic_spec ss;
    synthetic_spec_default(&ss);
    ss.n_train = 64;
    ss.n_test = 300;
    dataset train, test;
    CU_ASSERT_FATAL(dataset_synthetic(&ss, 3, &train, &test) == SS_OK);
    model_spec spec;
    CU_ASSERT_FATAL(model_spec_parse(&spec, model_name, 1, 28, 28, 10) == SS_OK);
    model *m[REPLICAS], *holder;
    /* 0, 2 and 4 the same bits; 1 its own; 3 is 1 with class 9's bias raised (or, with batch
     * norm, its running statistics moved) */
    const uint64_t seeds[REPLICAS] = {11, 12, 11, 12, 11};
    for (int r = 0; r < REPLICAS; r++)
        CU_ASSERT_FATAL(model_create(dev, &spec, seeds[r], 32, &m[r]) == SS_OK);
    CU_ASSERT_FATAL(model_create(dev, &spec, 99, 32, &holder) == SS_OK);
    const size_t np = model_param_count(m[3]), nb = model_buffer_count(m[3]);
    if (nb)
        for (size_t i = 0; i < nb; i++)
            model_buffers(m[3])[i] += 0.5f;
    else
        model_params(m[3])[np - 1] += 50.0f;
    double expect = 0;
    for (int r = 0; r < REPLICAS; r++)
        expect += accuracy_of(m[r], &test) / REPLICAS;
    CU_ASSERT(accuracy_of(m[3], &test) != accuracy_of(m[1], &test)); /* the case can fail */
    em_jobs_config cfg = {.threads = threads,
                          .workers = REPLICAS,
                          .max_batch = 32,
                          .train = &train,
                          .dev = dev,
                          .spec = &spec,
                          .seed = 1};
    em_jobs *j;
    CU_ASSERT_FATAL(em_jobs_create(&cfg, &j) == SS_OK);
    const double got = em_jobs_accuracy_mean(j, m, REPLICAS, holder, &test);
    SS_CHECK_CLOSE(got, expect, 0, 1e-12);
    em_jobs_destroy(j);
    for (int r = 0; r < REPLICAS; r++)
        model_destroy(m[r]);
    model_destroy(holder);
    dataset_free(&train);
    dataset_free(&test);
    device_close(dev);
}

static void test_mlp_one_thread(void) {
    accuracy_mean_case("mlp:16", 1);
}

static void test_mlp_two_threads(void) {
    accuracy_mean_case("mlp:16", 2);
}

static void test_resnet_buffers(void) {
    accuracy_mean_case("resnet:8", 2);
}

static CU_TestInfo tests[] = {
    {"mlp, 1 thread: equal replicas once, the same mean", test_mlp_one_thread},
    {"mlp, 2 threads: equal replicas once, the same mean", test_mlp_two_threads},
    {"resnet:8: a replica differing in its running statistics is its own", test_resnet_buffers},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"replicas' own accuracies", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}

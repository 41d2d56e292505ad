/* CUnit suite of the mean of the replicas' own test accuracies (em_jobs_accuracy_mean): replicas
 * that hold the same bits are evaluated once, and the mean is what evaluating every replica
 * gives, on one thread and on several. A replica that differs only in its last parameter (a
 * class's bias), or only in a buffer (batch norm's running statistics), is not taken for its
 * twin. And em_jobs_mark, on which an evaluation waits for the jobs in flight when it came due. */
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

/* The CPU device, a synthetic data set of 64 training samples and n_test test samples, and the
 * model spec `name` on its shape. */
static device *open_case(const char *name, size_t n_test, dataset *train, dataset *test,
                         model_spec *spec) {
    device *dev;
    char notice[256];
    CU_ASSERT_FATAL(device_open("cpu", &dev, notice, sizeof notice) == SS_OK);
    synthetic_spec ss;
    synthetic_spec_default(&ss);
    ss.n_train = 64;
    ss.n_test = n_test;
    CU_ASSERT_FATAL(dataset_synthetic(&ss, 3, train, test) == SS_OK);
    CU_ASSERT_FATAL(model_spec_parse(spec, name, 1, 28, 28, 10) == SS_OK);
    return dev;
}

static void accuracy_mean_case(const char *model_name, int threads) {
    dataset train, test;
    model_spec spec;
    device *dev = open_case(model_name, 300, &train, &test, &spec);
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

/* em_jobs_mark: what was settled, in which order, and what was in flight when fn ran */
typedef struct mark_log {
    em_jobs *j;
    int order[8], n_settled;
    int fn_calls, settled_at_fn, in_flight_at_fn[8];
} mark_log;

static void log_settled(void *ctx, int w, const em_job_out *out) {
    mark_log *l = ctx;
    (void)out;
    l->order[l->n_settled++] = w;
}

static void log_mark(void *ctx) {
    mark_log *l = ctx;
    l->fn_calls++;
    l->settled_at_fn = l->n_settled;
    for (int w = 0; w < 5; w++)
        l->in_flight_at_fn[w] = em_jobs_in_flight(l->j, w);
}

static void submit(em_jobs *j, int w, model *m) {
    size_t *idx = em_jobs_indices(j, w);
    for (int i = 0; i < 16; i++)
        idx[i] = (size_t)(i + 3 * w);
    em_jobs_submit(j, w, m, 1, 16, NULL, NULL);
}

/* The jobs in flight at the mark settle together (in the order they began) at the first call
 * that settles one, or at a second submit, and fn runs right after them, before any later job
 * settles; one submit goes through first; with no job in flight fn runs at once. */
static void mark_case(int threads) {
    dataset train, test;
    model_spec spec;
    device *dev = open_case("mlp:16", 16, &train, &test, &spec);
    model *m[5];
    for (int r = 0; r < 5; r++)
        CU_ASSERT_FATAL(model_create(dev, &spec, 7, 16, &m[r]) == SS_OK);
    for (int take_first = 0; take_first < 2; take_first++) {
        mark_log l = {0};
        em_jobs_config cfg = {.threads = threads,
                              .workers = 5,
                              .max_batch = 16,
                              .train = &train,
                              .dev = dev,
                              .spec = &spec,
                              .seed = 1,
                              .settled = log_settled,
                              .ctx = &l};
        CU_ASSERT_FATAL(em_jobs_create(&cfg, &l.j) == SS_OK);
        em_jobs_mark(l.j, log_mark, &l); /* nothing in flight: at once */
        CU_ASSERT_EQUAL(l.fn_calls, 1);
        l.fn_calls = 0;
        for (int w = 0; w < 3; w++)
            submit(l.j, w, m[w]);
        em_jobs_mark(l.j, log_mark, &l);
        submit(l.j, 3, m[3]); /* let through */
        CU_ASSERT_EQUAL(l.fn_calls, 0);
        CU_ASSERT_EQUAL(l.n_settled, 0);
        CU_ASSERT(em_jobs_in_flight(l.j, 0) && em_jobs_in_flight(l.j, 3));
        if (take_first)
            em_jobs_take(l.j, 3); /* settles 0, 1, 2, then fn, then 3 */
        else
            submit(l.j, 4, m[4]); /* a second submit: 0, 1, 2 and fn first */
        CU_ASSERT_EQUAL(l.fn_calls, 1);
        CU_ASSERT_EQUAL(l.settled_at_fn, 3);
        CU_ASSERT(l.order[0] == 0 && l.order[1] == 1 && l.order[2] == 2);
        CU_ASSERT(!l.in_flight_at_fn[0] && !l.in_flight_at_fn[2] && l.in_flight_at_fn[3]);
        CU_ASSERT_EQUAL(l.in_flight_at_fn[4], 0); /* not yet submitted when fn ran */
        CU_ASSERT_EQUAL(l.n_settled, take_first ? 4 : 3);
        em_jobs_settle_all(l.j);
        CU_ASSERT_EQUAL(l.n_settled, take_first ? 4 : 5);
        CU_ASSERT_EQUAL(l.fn_calls, 1);
        em_jobs_destroy(l.j);
    }
    for (int r = 0; r < 5; r++)
        model_destroy(m[r]);
    dataset_free(&train);
    dataset_free(&test);
    device_close(dev);
}

static void test_mark_one_thread(void) {
    mark_case(1);
}

static void test_mark_two_threads(void) {
    mark_case(2);
}

static CU_TestInfo tests[] = {
    {"em_jobs_mark, 1 thread: the jobs in flight settle together, then fn, after one submit",
     test_mark_one_thread},
    {"em_jobs_mark, 2 threads: the jobs in flight settle together, then fn, after one submit",
     test_mark_two_threads},
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

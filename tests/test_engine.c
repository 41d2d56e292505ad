/* CUnit suite of the compute engine (common/engine.h) and of what it must not change: an
 * emulated run gives the same bytes on one thread and on several (bsp and selsync, mlp and cnn,
 * modelled and measured compute), --threads refuses what it cannot take, and bench emulation's
 * table and CSV. The runs are the built program as a child process (build/syncsim). */
#include "common/engine.h"
#include "common/status.h"
#include "ss_test.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmp_dir[256];

static int run_syncsim(const char *args, char **output) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s/syncsim %s 2>&1", SS_BINARY_DIR, args);
    return ss_test_shell(cmd, output);
}

static int suite_init(void) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/ss_test_engine_XXXXXX");
    return mkdtemp(tmp_dir) ? 0 : 1;
}

static int suite_clean(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    return system(cmd) == 0 ? 0 : 1;
}

/* ---- the pool ---- */

typedef struct sum_job {
    engine_task t;
    int index;
    long result;
    int runs;
    pthread_t by;
} sum_job;

/* A task with enough work that several run at once on a pool. */
static void sum_run(void *arg, int slot) {
    sum_job *j = arg;
    (void)slot;
    long s = 0;
    for (long i = 0; i <= 20000L * (j->index + 1); i++)
        s += i % 7;
    j->result = s;
    j->runs++;
    j->by = pthread_self();
}

static long sum_expected(int index) {
    long s = 0;
    for (long i = 0; i <= 20000L * (index + 1); i++)
        s += i % 7;
    return s;
}

static void test_pool_runs_each_task_once(void) {
    enum { TASKS = 64 };
    const int counts[] = {1, 2, 4};
    for (int c = 0; c < 3; c++) {
        engine *en = NULL;
        CU_ASSERT_EQUAL_FATAL(engine_create(counts[c], &en), SS_OK);
        CU_ASSERT_EQUAL(engine_threads(en), counts[c]);
        static sum_job jobs[TASKS];
        for (int round = 0; round < 2; round++) { /* a done task is submitted again */
            for (int i = 0; i < TASKS; i++) {
                if (round == 0)
                    jobs[i] = (sum_job){.t = {.run = sum_run, .arg = &jobs[i]}, .index = i};
                engine_submit(en, &jobs[i].t);
            }
            for (int i = TASKS - 1; i >= 0; i--) /* waited for in any order */
                engine_wait(en, &jobs[i].t);
            for (int i = 0; i < TASKS; i++) {
                CU_ASSERT_EQUAL(jobs[i].result, sum_expected(i));
                CU_ASSERT_EQUAL(jobs[i].runs, round + 1);
                /* one thread: the caller runs them; a pool: never the caller */
                CU_ASSERT_EQUAL(pthread_equal(jobs[i].by, pthread_self()) != 0, counts[c] == 1);
            }
        }
        engine_destroy(en);
    }
}

static void test_parse_threads(void) {
    int t = -1;
    CU_ASSERT_EQUAL(engine_parse_threads("3", &t), SS_OK);
    CU_ASSERT_EQUAL(t, 3);
    CU_ASSERT_EQUAL(engine_parse_threads("auto", &t), SS_OK);
    CU_ASSERT_EQUAL(t, engine_cores());
    const char *bad[] = {"0", "1025", "-2", "two", "2x", ""};
    for (int i = 0; i < 5; i++) { /* "" is auto (a configuration without the key) */
        CU_ASSERT_EQUAL(engine_parse_threads(bad[i], &t), SS_EUSAGE);
        CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "--threads"));
        CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "1 to 1024"));
    }
    CU_ASSERT_EQUAL(engine_parse_threads(bad[5], &t), SS_OK);
    CU_ASSERT_EQUAL(engine_create(0, &(engine *){NULL}), SS_EUSAGE);
    engine_share_cores(engine_cores() + 1); /* more jobs than cores: one thread each */
    CU_ASSERT_EQUAL(engine_parse_threads("auto", &t), SS_OK);
    CU_ASSERT_EQUAL(t, 1);
    engine_share_cores(1);
}

/* ---- runs: the same bytes on 1 and on 2 threads ---- */

static int same_file(const char *a, const char *b) {
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "cmp '%s' '%s' >&2", a, b);
    return ss_test_shell(cmd, NULL) == 0;
}

/* steps.trace's records and header, but for the configuration lines that name the output
 * directory and the thread count */
static int same_trace(const char *a, const char *b) {
    char cmd[4000];
    snprintf(cmd, sizeof cmd,
             "grep -v '^# config \\(out\\|threads\\) =' '%s/steps.trace' > '%s.t' && "
             "grep -v '^# config \\(out\\|threads\\) =' '%s/steps.trace' > '%s.t' && "
             "test $(grep -c '^[^#]' '%s.t') -gt 0 && cmp '%s.t' '%s.t' >&2",
             a, a, b, b, a, a, b);
    return ss_test_shell(cmd, NULL) == 0;
}

/* summary.json without its thread count: every other key, byte for byte */
static int same_summary(const char *a, const char *b) {
    char cmd[3400];
    snprintf(cmd, sizeof cmd,
             "grep -v '\"threads\"' '%s/summary.json' > '%s.s' && grep -v '\"threads\"' "
             "'%s/summary.json' > '%s.s' && cmp '%s.s' '%s.s' >&2",
             a, a, b, b, a, b);
    return ss_test_shell(cmd, NULL) == 0;
}

/* Runs `train ARGS --threads T` for T = 1, 2 and compares the outputs. */
static void expect_same_bytes(const char *name, const char *args, int compare_times) {
    char dirs[2][512];
    for (int t = 1; t <= 2; t++) {
        char cmd[1600], *out = NULL;
        snprintf(dirs[t - 1], sizeof dirs[0], "%s/%s-t%d", tmp_dir, name, t);
        snprintf(cmd, sizeof cmd, "train %s --threads %d --out %s", args, t, dirs[t - 1]);
        int rc = run_syncsim(cmd, &out);
        if (rc != 0) fprintf(stderr, "\n  syncsim %s: exit %d\n%s\n", cmd, rc, out);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        char want[64];
        snprintf(want, sizeof want, ", %d compute thread%s |", t, t == 1 ? "" : "s");
        CU_ASSERT_PTR_NOT_NULL(strstr(out, want)); /* the banner says it */
        free(out);
    }
    char a[1200], b[1200];
    snprintf(a, sizeof a, "%s/metrics.csv", dirs[0]);
    snprintf(b, sizeof b, "%s/metrics.csv", dirs[1]);
    if (compare_times) {
        CU_ASSERT(same_file(a, b));
        CU_ASSERT(same_trace(dirs[0], dirs[1]));
        CU_ASSERT(same_summary(dirs[0], dirs[1]));
    } else { /* measured: the losses and accuracies, not the times */
        char cmd[2400];
        snprintf(cmd, sizeof cmd,
                 "for d in '%s' '%s'; do grep -o '\"test_[a-z]*\":[^,]*' $d/summary.json > $d.acc; "
                 "done; cmp '%s.acc' '%s.acc' >&2",
                 dirs[0], dirs[1], dirs[0], dirs[1]);
        CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
    }
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "grep -q '\"threads\":\t2,' '%s/summary.json'", dirs[1]);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
}

static void test_bsp_mlp_same_bytes(void) {
    expect_same_bytes("bsp",
                      "--policy bsp --workers 4 --dataset synthetic --model mlp:64 "
                      "--epochs 0.3 --eval-every 5 --seed 3",
                      1);
}

static void test_selsync_cnn_same_bytes(void) {
    expect_same_bytes("selsync",
                      "--policy selsync --workers 4 --dataset synthetic --model "
                      "cnn:4,8,16 --epochs 0.1 --eval-every 4 --delta 0.05 --seed 5",
                      1);
}

static void test_ssp_same_bytes(void) {
    expect_same_bytes("ssp",
                      "--policy ssp --workers 4 --dataset synthetic --model mlp:32 "
                      "--epochs 0.2 --seed 2",
                      1);
}

static void test_measured_same_model(void) {
    expect_same_bytes("measured",
                      "--policy bsp --workers 4 --dataset synthetic --model mlp:32 "
                      "--epochs 0.2 --compute measured --seed 4",
                      0);
}

/* ---- bad input ---- */

static void test_bad_threads(void) {
    const char *bad[] = {"0", "1025", "many"};
    for (int i = 0; i < 3; i++) {
        char args[600], *out = NULL;
        snprintf(args, sizeof args,
                 "train --policy bsp --workers 2 --dataset synthetic --epochs 0.01 --threads %s "
                 "--out %s/bad",
                 bad[i], tmp_dir);
        CU_ASSERT_EQUAL(run_syncsim(args, &out), 2);
        char want[64];
        snprintf(want, sizeof want, "--threads %s: give a thread count from 1 to 1024", bad[i]);
        if (!strstr(out, want)) fprintf(stderr, "\n  %s\n", out);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
        free(out);
    }
    char path[600];
    snprintf(path, sizeof path, "%s/bad", tmp_dir);
    CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0); /* refused before any output */
}

/* ---- bench emulation ---- */

static void test_bench_emulation(void) {
    char args[800], *out = NULL;
    snprintf(args, sizeof args,
             "bench emulation --dataset synthetic --model mlp:32 --workers 4 --epochs 0.1 "
             "--threads 2 --out %s/bench --csv %s/bench.csv",
             tmp_dir, tmp_dir);
    int rc = run_syncsim(args, &out);
    if (rc != 0) fprintf(stderr, "\n  %s\n", out);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "samples/s"));
    free(out);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "cat %s/bench.csv", tmp_dir);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, &out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "model,policy,workers,threads,steps,samples,wall_s,"
                                       "samples_per_s,speedup,same_params\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\nmlp:32,bsp,4,1,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\nmlp:32,bsp,4,2,"));
    char *line2 = strstr(out, "\nmlp:32,bsp,4,2,");
    CU_ASSERT(line2 && strstr(line2, ",yes\n")); /* the same parameters on 2 threads */
    free(out);
}

static CU_TestInfo engine_tests[] = {
    {"engine: every task runs once, on the pool's threads, any thread count",
     test_pool_runs_each_task_once},
    {"engine: --threads auto, N, and what it refuses", test_parse_threads},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo run_tests[] = {
    {"train bsp mlp: --threads 1 and 2 give the same bytes", test_bsp_mlp_same_bytes},
    {"train selsync cnn: --threads 1 and 2 give the same bytes", test_selsync_cnn_same_bytes},
    {"train ssp: --threads 1 and 2 give the same bytes", test_ssp_same_bytes},
    {"train --compute measured: --threads 1 and 2 give the same model", test_measured_same_model},
    {"train --threads 0, 1025, many: exit 2 naming the option", test_bad_threads},
    {"bench emulation: table and CSV, the same parameters on 2 threads", test_bench_emulation},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"compute engine", NULL, NULL, NULL, NULL, engine_tests},
    {"runs on the engine", suite_init, suite_clean, NULL, NULL, run_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}

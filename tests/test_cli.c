/* CUnit suite of the syncsim program as a user runs it: exit codes and messages on bad input,
 * complete outputs of a diverged run, bit-identical outputs of two identical runs, and compare's
 * table and CSV. The program runs as a child process (build/syncsim). */
#include "ss_test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmp_dir[256];

/* Runs `syncsim ARGS`, capturing stdout+stderr into *output (caller frees); returns the exit code.
 */
static int run_syncsim(const char *args, char **output) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s/syncsim %s 2>&1", SS_BINARY_DIR, args);
    return ss_test_shell(cmd, output);
}

/* Checks the exit code and that the output contains each of the given fragments. */
static void expect(const char *args, int code, const char *frag1, const char *frag2) {
    char *out = NULL;
    int rc = run_syncsim(args, &out);
    int ok = rc == code && (!frag1 || strstr(out, frag1)) && (!frag2 || strstr(out, frag2));
    if (!ok)
        fprintf(stderr,
                "\n  syncsim %s\n  exit %d (expected %d), output:\n%s\n  expected: '%s' '%s'\n",
                args, rc, code, out, frag1 ? frag1 : "", frag2 ? frag2 : "");
    CU_ASSERT(ok);
    free(out);
}

static int file_equal(const char *a, const char *b) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

static int suite_init(void) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/ss_test_cli_XXXXXX");
    return mkdtemp(tmp_dir) ? 0 : 1;
}

static int suite_clean(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    return system(cmd) == 0 ? 0 : 1;
}

static void test_usage_errors(void) {
    expect("train --lrr 0.1", 2, "unknown option --lrr", "did you mean --lr");
    expect("train --lr abc", 2, "option --lr", "invalid value 'abc'");
    expect("train --batch 0", 2, "option --batch", "[1, 65536]");
    expect("train --momentum 1.5", 2, "option --momentum", "number in");
    expect("train --model resnet9000 --dataset synthetic --epochs 0.01", 2, "resnet9000", "mlp");
    expect("frobnicate", 2, "unknown command 'frobnicate'", NULL);
    expect("train --policy bsp --staleness 3", 2, "--staleness does not apply to --policy bsp",
           NULL);
    expect("train --delta 0.1", 2, "needs a simulated run", NULL);
    expect("train --policy bsp --platform x.xml --bandwidth 5Gbps", 2, "contradicts", NULL);
    expect("train --policy bsp --bandwidth 0Gbps --dataset synthetic --epochs 0.01 --out /tmp/x", 2,
           "--bandwidth", NULL);
    expect("train --policy fedavg --local-steps 4 --local-epochs 1", 2, "give one", NULL);
    expect("compare --policies bsp,lol", 2, "unknown policy 'lol'", NULL);
    expect("bench", 2, "bench needs a target", NULL);
}

static void test_input_errors(void) {
    char args[1200];
    snprintf(args, sizeof args, "train --dataset fashion-mnist --data-dir %s/nowhere --out %s/o",
             tmp_dir, tmp_dir);
    expect(args, 1, "dataset-fashion-mnist", "nowhere");
    /* a truncated IDX file names the file and the expected size */
    snprintf(
        args, sizeof args,
        "mkdir -p %s/trunc && cd %s/trunc && printf "
        "'\\0\\0\\10\\3\\0\\0\\0\\2\\0\\0\\0\\34\\0\\0\\0\\34abc' > "
        "train-images-idx3-ubyte && cp train-images-idx3-ubyte t10k-images-idx3-ubyte && printf "
        "'\\0\\0\\10\\1\\0\\0\\0\\2\\1\\2' > train-labels-idx1-ubyte && cp train-labels-idx1-ubyte "
        "t10k-labels-idx1-ubyte",
        tmp_dir, tmp_dir);
    CU_ASSERT(system(args) == 0);
    snprintf(args, sizeof args, "train --dataset %s/trunc --out %s/o", tmp_dir, tmp_dir);
    expect(args, 1, "train-images-idx3-ubyte", "1568");
    snprintf(args, sizeof args,
             "train --policy bsp --workers 32 --platform %s/platforms/cluster_5gbps_16.xml "
             "--dataset synthetic --epochs 0.01 --out %s/o",
             SS_SOURCE_DIR, tmp_dir);
    expect(args, 2, "has 16 hosts", "32 workers");
}

/* A NaN loss is a result: status diverged, exit code 3, outputs complete. */
static void test_diverged_run(void) {
    char args[1200], path[600];
    snprintf(
        args, sizeof args,
        "train --policy bsp --workers 2 --dataset synthetic --model mlp --lr 80 --momentum 0.99 "
        "--epochs 1 --out %s/div",
        tmp_dir);
    expect(args, 3, "diverged", NULL);
    /* every worker ends after the step that diverged: no collective is left waiting */
    char *out = NULL;
    for (int k = 0; k < 3; k++) {
        static const char *const policies[] = {"selsync", "fedavg", "ssp"};
        snprintf(args, sizeof args,
                 "train --policy %s --workers 4 --dataset synthetic --lr 80 --momentum 0.99 "
                 "--epochs 1 --out %s/div-%s",
                 policies[k], tmp_dir, policies[k]);
        CU_ASSERT_EQUAL(run_syncsim(args, &out), 3);
        CU_ASSERT(strstr(out, "eadlock") == NULL);
        free(out);
    }
    snprintf(path, sizeof path, "grep -q '\"status\":.*\"diverged\"' %s/div/summary.json", tmp_dir);
    CU_ASSERT(system(path) == 0);
    snprintf(path, sizeof path, "test $(wc -l < %s/div/metrics.csv) -ge 2", tmp_dir);
    CU_ASSERT(system(path) == 0);
    snprintf(path, sizeof path, "ls %s/div/*.tmp.* 2>/dev/null | grep -q .", tmp_dir);
    CU_ASSERT(system(path) != 0); /* no temporary file left behind */
}

/* The same seed and configuration: bit-identical metrics, trace and summary. */
static void test_identical_runs(void) {
    const char *files[] = {"metrics.csv", "steps.trace", "summary.json", "config.ini",
                           "platform.xml"};
    char args[1200];
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args,
                 "train --policy selsync --workers 4 --dataset synthetic --model mlp:32 "
                 "--epochs 0.5 --delta 0.02 --bandwidth 10Gbps --seed 5 --out %s/same%d",
                 tmp_dir, k);
        char *out = NULL;
        CU_ASSERT_EQUAL(run_syncsim(args, &out), 0);
        CU_ASSERT_PTR_NOT_NULL(out ? strstr(out, "ok: test accuracy") : NULL);
        /* --device auto (the default) without a GPU runs on the CPU without a CUDA notice; the
         * banner names the device */
        CU_ASSERT_PTR_NULL(out ? strstr(out, "CUDA") : "");
        CU_ASSERT_PTR_NOT_NULL(out ? strstr(out, "\ndevice ") : NULL);
        free(out);
    }
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char a[400], b[400];
        snprintf(a, sizeof a, "%s/same0/%s", tmp_dir, files[i]);
        snprintf(b, sizeof b, "%s/same1/%s", tmp_dir, files[i]);
        int same = file_equal(a, b);
        if (!same && strcmp(files[i], "config.ini") && strcmp(files[i], "steps.trace"))
            fprintf(stderr, "\n  %s differs between identical runs\n", files[i]);
        /* config.ini and the trace header name the output directory; compare the rest */
        if (!strcmp(files[i], "config.ini") || !strcmp(files[i], "steps.trace")) {
            char cmd[1000];
            snprintf(cmd, sizeof cmd,
                     "diff <(grep -v '^#\\|^out' '%s') <(grep -v '^#\\|^out' '%s') "
                     ">/dev/null",
                     a, b);
            char bash[1100];
            snprintf(bash, sizeof bash, "bash -c \"%s\"", cmd);
            same = system(bash) == 0;
        }
        CU_ASSERT(same);
    }
    /* a different seed gives a different run */
    snprintf(args, sizeof args,
             "train --policy selsync --workers 4 --dataset synthetic --model mlp:32 --epochs 0.5 "
             "--delta 0.02 --bandwidth 10Gbps --seed 6 --out %s/other",
             tmp_dir);
    expect(args, 0, NULL, NULL);
    char a[400], b[400];
    snprintf(a, sizeof a, "%s/same0/metrics.csv", tmp_dir);
    snprintf(b, sizeof b, "%s/other/metrics.csv", tmp_dir);
    CU_ASSERT(!file_equal(a, b));
    /* config.ini re-runs the same job */
    snprintf(args, sizeof args, "train --config %s/same0/config.ini --out %s/again", tmp_dir,
             tmp_dir);
    expect(args, 0, NULL, NULL);
    snprintf(b, sizeof b, "%s/again/metrics.csv", tmp_dir);
    CU_ASSERT(file_equal(a, b));
}

/* SelSync with a fixed delta that never (or always) lets a step stay local says that the run
 * degenerated, and into what; a delta that makes it choose says nothing. */
static void test_degenerate_delta(void) {
    const char *base = "train --policy selsync --workers 4 --dataset synthetic --model mlp:32 "
                       "--epochs 1 --ewma-window 4 --bandwidth 10Gbps";
    const struct {
        const char *delta, *said;
    } cases[] = {{"5", "synchronized at none: this run is local SGD"},
                 {"0", "synchronized at every one: this run is BSP"},
                 {"auto:0.5", NULL}};
    for (int i = 0; i < 3; i++) {
        char args[600];
        snprintf(args, sizeof args, "%s --delta %s --out %s/delta%d", base, cases[i].delta, tmp_dir,
                 i);
        char *out = NULL;
        CU_ASSERT_EQUAL(run_syncsim(args, &out), 0);
        const char *w = out ? strstr(out, "warning: --delta") : NULL;
        if (cases[i].said) {
            CU_ASSERT_PTR_NOT_NULL(w ? strstr(w, cases[i].said) : NULL);
        } else {
            CU_ASSERT_PTR_NULL(w);
        }
        if ((cases[i].said != NULL) != (w != NULL)) fprintf(stderr, "\n  %s\n%s\n", args, out);
        free(out);
    }
}

/* Measured compute (--compute measured) starts with an untimed forward and backward pass; the
 * model must not see it. BSP's decisions do not depend on time: the same seed gives the same
 * per-step losses and gradient norms as under the modelled compute, and the same accuracy. */
static void test_measured_same_model(void) {
    char args[1200];
    const char *modes[] = {"model", "measured"};
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args,
                 "train --policy bsp --workers 2 --dataset synthetic --model mlp:32 --epochs 0.2 "
                 "--compute %s --seed 7 --out %s/compute-%s",
                 modes[k], tmp_dir, modes[k]);
        expect(args, 0, "ok: test accuracy", NULL);
    }
    char cmd[1600];
    for (int k = 0; k < 2; k++) { /* the records without their times, and the test results */
        snprintf(cmd, sizeof cmd,
                 "grep -v '^#' %s/compute-%s/steps.trace | awk '{$3 = $4 = $5 = $6 = 0; print}' | "
                 "sort > %s/steps-%s.txt && grep 'test_accuracy\\|test_loss' "
                 "%s/compute-%s/summary.json >> %s/steps-%s.txt",
                 tmp_dir, modes[k], tmp_dir, modes[k], tmp_dir, modes[k], tmp_dir, modes[k]);
        CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
    }
    snprintf(cmd, sizeof cmd, "cmp %s/steps-model.txt %s/steps-measured.txt", tmp_dir, tmp_dir);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
}

/* The "sim_time_s" line of DIR/summary.json (caller frees), or NULL. */
static char *sim_time_line(const char *dir) {
    char cmd[600], *out = NULL;
    snprintf(cmd, sizeof cmd, "grep '\"sim_time_s\"' '%s/summary.json'", dir);
    if (ss_test_shell(cmd, &out) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* A replay's config.ini holds the options it was given (and the seed), not the defaults of the
 * others, which it took from the trace: re-run with --config, it replays the same. */
static void test_replay_config(void) {
    char args[1200], a[400], b[400];
    snprintf(args, sizeof args,
             "train --policy bsp --workers 4 --dataset synthetic --model mlp:32 --epochs 0.2 "
             "--bandwidth 10Gbps --network-model SMPI --seed 3 --out %s/rec",
             tmp_dir);
    expect(args, 0, NULL, NULL);
    const char *given[] = {"", "--network-model CM02 --seed 4"};
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args, "replay --trace %s/rec/steps.trace %s --out %s/rep%d", tmp_dir,
                 given[k], tmp_dir, k);
        expect(args, 0, "recorded simulated time", NULL);
        snprintf(a, sizeof a, "%s/rep%d", tmp_dir, k);
        snprintf(args, sizeof args, "grep -c 'network-model\\|bandwidth' '%s/config.ini'", a);
        char *count = NULL;
        ss_test_shell(args, &count);
        CU_ASSERT(count && atoi(count) == k); /* the trace's SMPI and 10Gbps stay in the trace */
        free(count);
        snprintf(args, sizeof args, "replay --config %s/config.ini --out %s/again%d", a, tmp_dir,
                 k);
        expect(args, 0, NULL, NULL);
        snprintf(b, sizeof b, "%s/again%d", tmp_dir, k);
        char *t1 = sim_time_line(a), *t2 = sim_time_line(b);
        CU_ASSERT(t1 && t2 && !strcmp(t1, t2));
        free(t1);
        free(t2);
    }
    /* with the given model the replay differs from the recorded SMPI one */
    snprintf(a, sizeof a, "%s/rep0", tmp_dir);
    snprintf(b, sizeof b, "%s/rep1", tmp_dir);
    char *t1 = sim_time_line(a), *t2 = sim_time_line(b);
    CU_ASSERT(t1 && t2 && strcmp(t1, t2));
    free(t1);
    free(t2);
}

/* compare: one row per (network, policy), TTA and speedup against BSP. */
static void test_compare(void) {
    char args[600], *out = NULL;
    snprintf(args, sizeof args,
             "compare --policies bsp,selsync,fedavg --networks 5Gbps,100Gbps --workers 4 "
             "--dataset synthetic --model mlp:32 --epochs 1 --out %s/cmp",
             tmp_dir);
    int rc = run_syncsim(args, &out);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT(strstr(out, "speedup") != NULL);
    free(out);
    char path[400];
    snprintf(path, sizeof path, "%s/cmp/compare.csv", tmp_dir);
    FILE *fp = fopen(path, "r");
    CU_ASSERT_FATAL(fp != NULL);
    char line[512];
    CU_ASSERT(fgets(line, sizeof line, fp) != NULL);
    const char *header =
        "policy,platform,workers,test_accuracy,sim_time_s,tta_s,speedup_vs_bsp,lssr,bytes_sent";
    CU_ASSERT(strncmp(line, header, strlen(header)) == 0);
    int rows = 0, bsp_speedup_one = 0;
    while (fgets(line, sizeof line, fp)) {
        rows++;
        if (!strncmp(line, "bsp,", 4) && strstr(line, ",1.000000,")) bsp_speedup_one++;
    }
    fclose(fp);
    CU_ASSERT_EQUAL(rows, 6);
    CU_ASSERT_EQUAL(bsp_speedup_one, 2);
}

static CU_TestInfo cli_tests[] = {
    {"syncsim: usage errors exit 2 and name the option", test_usage_errors},
    {"syncsim: input errors exit 1 (2 for a request the platform cannot meet)", test_input_errors},
    {"syncsim train: a diverged run exits 3 with complete outputs", test_diverged_run},
    {"syncsim train: identical runs give identical outputs; config.ini re-runs",
     test_identical_runs},
    {"syncsim replay: config.ini holds the options given and re-runs the same replay",
     test_replay_config},
    {"syncsim compare: table, compare.csv, speedup of BSP is 1", test_compare},
    {"syncsim train: a delta that makes SelSync BSP or local SGD is said", test_degenerate_delta},
    {"syncsim train: measured compute leaves the model as the modelled one does",
     test_measured_same_model},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"syncsim command line", suite_init, suite_clean, NULL, NULL, cli_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}

/* CUnit suite of the syncsim program as a user runs it: exit codes and messages on bad input,
 * complete outputs of a diverged run, bit-identical outputs of two identical runs, and compare's
 * table and CSV. The program runs as a child process (build/syncsim). */
#include "ss_test.h"

#include "kernels/blas_core.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
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

/* The banner's "OpenBLAS <core>" of a short train run with the environment prefix `env`
 * (malloc'ed, NULL if absent), and whether the run printed the core note. */
static char *banner_core(const char *env, int *noted) {
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "cd '%s' && %s %s/syncsim train --model logreg --workers 2 --epochs 0.01 --device cpu "
             "--out core 2>&1",
             tmp_dir, env, SS_BINARY_DIR);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, &out), 0);
    const char *at = strstr(out, "(OpenBLAS ");
    char *core = NULL;
    if (at) {
        at += strlen("(OpenBLAS ");
        core = strndup(at, strcspn(at, ","));
    }
    *noted = strstr(out, "note: OpenBLAS chose") != NULL;
    if (!core) fprintf(stderr, "\n  no OpenBLAS core in:\n%s\n", out);
    free(out);
    return core;
}

/* OpenBLAS's SSE kernels, chosen for a CPU model it does not know, are replaced by its AVX2 or
 * AVX-512 ones where the CPU has them (the program runs itself again with OPENBLAS_CORETYPE); a
 * user's own OPENBLAS_CORETYPE is kept. */
static void test_blas_core(void) {
    CU_ASSERT_STRING_EQUAL(blas_core_better("Prescott", BLAS_CPU_AVX2_FMA | BLAS_CPU_AVX512),
                           "SkylakeX");
    CU_ASSERT_STRING_EQUAL(blas_core_better("prescott", BLAS_CPU_AVX2_FMA), "Haswell");
    CU_ASSERT_STRING_EQUAL(blas_core_better("Sandybridge", BLAS_CPU_AVX2_FMA), "Haswell");
    CU_ASSERT_STRING_EQUAL(blas_core_better("Nehalem", BLAS_CPU_AVX512), "SkylakeX");
    CU_ASSERT_PTR_NULL(blas_core_better("Prescott", 0)); /* an SSE-only CPU: its choice stands */
    CU_ASSERT_PTR_NULL(blas_core_better("Haswell", BLAS_CPU_AVX2_FMA | BLAS_CPU_AVX512));
    CU_ASSERT_PTR_NULL(blas_core_better("Cooperlake", BLAS_CPU_AVX2_FMA | BLAS_CPU_AVX512));
    CU_ASSERT_PTR_NULL(blas_core_better("Zen", BLAS_CPU_AVX2_FMA));
    CU_ASSERT_PTR_NULL(blas_core_better(NULL, BLAS_CPU_AVX512));

    int noted = 0;
    char *core = banner_core("OPENBLAS_CORETYPE=Prescott", &noted);
    CU_ASSERT(core && !strcasecmp(core, "Prescott")); /* the user's choice */
    CU_ASSERT(!noted);
    free(core);
    /* whatever this CPU is, the run ends on a core that no better one replaces */
    core = banner_core("env -u OPENBLAS_CORETYPE", &noted);
    CU_ASSERT_PTR_NOT_NULL(core);
    if (core) {
        CU_ASSERT_PTR_NULL(blas_core_better(core, blas_core_cpu_features()));
    }
    free(core);
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

/* compare: one row per (network, partition, policy), TTA and speedup against the BSP run of
 * the same network and partition. */
static void test_compare(void) {
    char args[600], *out = NULL;
    snprintf(args, sizeof args,
             "compare --policies bsp,selsync,fedavg --networks 5Gbps,100Gbps --workers 4 "
             "--partitions iid,noniid:3 --dataset synthetic --model mlp:32 --epochs 1 --out %s/cmp",
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
    const char *header = "policy,platform,partition,workers,test_accuracy,sim_time_s,tta_s,speedup_"
                         "vs_bsp,lssr,bytes_sent";
    CU_ASSERT(strncmp(line, header, strlen(header)) == 0);
    int rows = 0, bsp_speedup_one = 0, noniid = 0;
    while (fgets(line, sizeof line, fp)) {
        rows++;
        if (!strncmp(line, "bsp,", 4) && strstr(line, ",1.000000,")) bsp_speedup_one++;
        noniid += strstr(line, ",noniid:3,") != NULL;
    }
    fclose(fp);
    CU_ASSERT_EQUAL(rows, 12);
    CU_ASSERT_EQUAL(noniid, 6);
    CU_ASSERT_EQUAL(bsp_speedup_one, 4); /* each network and partition has its own reference */
    /* the runs of a partition are in directories of their own, and ran on it */
    snprintf(path, sizeof path, "%s/cmp/runs/fedavg-5Gbps-noniid-3/summary.json", tmp_dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "grep -q '\"partition\":.*\"noniid:3\"' %s", path);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
    snprintf(cmd, sizeof cmd,
             "grep -q '\"partition\":.*\"seldp\"' %s/cmp/runs/selsync-5Gbps-iid/summary.json",
             tmp_dir);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
}

/* compare whose every run fails (each refused by its memory check): exit 1, the table and
 * compare.csv say so, and no figure is left behind, whole or not, nor an earlier compare's. */
static void test_compare_all_failed(void) {
    char cmd[900], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/cmpfail && cd %s/cmpfail && touch compare.png compare.svg compare.txt "
             "compare-curves.csv",
             tmp_dir, tmp_dir);
    CU_ASSERT_EQUAL_FATAL(ss_test_shell(cmd, NULL), 0);
    snprintf(cmd, sizeof cmd,
             "SYNCSIM_MEMORY_LIMIT=1MB %s/syncsim compare --policies bsp --networks 5Gbps "
             "--partitions iid --workers 2 --dataset synthetic --model mlp:32 --epochs 0.05 "
             "--out %s/cmpfail 2>&1",
             SS_BINARY_DIR, tmp_dir);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, &out), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "1 of 1 runs failed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "/cmpfail/{compare.csv,config.ini}"));
    CU_ASSERT_PTR_NULL(strstr(out, "gnuplot"));
    free(out);
    snprintf(cmd, sizeof cmd,
             "cd %s/cmpfail && grep -q '^bsp,.*failed' compare.csv && for f in compare.png "
             "compare.svg compare.txt compare-curves.csv .compare.png.part; do [ ! -e $f ] || "
             "exit 1; done",
             tmp_dir);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
}

/* How many times `needle` occurs in `text`. */
static int count_of(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Each bench target's --help lists the options it takes, each once, and no other; the target
 * refuses the others. */
static void test_bench_help_per_target(void) {
    static const struct {
        const char *target;
        const char *has[6], *lacks[6];
    } targets[] = {
        {"kernels", {"--device ", "--model ", "--batch "}, {"--sizes ", "--epochs ", "--profile "}},
        {"network",
         {"--sizes ", "--channels ", "--gpu ", "--collective ", "--hosts-list "},
         {"--epochs ", "--lr ", "--momentum ", "--dataset ", "--device ", "--profile "}},
        {"coupling", {"--epochs ", "--lr ", "--dataset ", "--workers "}, {"--sizes ", "--gpu "}},
        {"replay",
         {"--profile ", "--steps ", "--hosts-list ", "(default 1024,4096,65536)"},
         {"--sizes ", "--epochs ", "--device "}},
    };
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        char args[128], *out = NULL;
        snprintf(args, sizeof args, "bench %s --help", targets[i].target);
        CU_ASSERT_EQUAL(run_syncsim(args, &out), 0);
        for (int k = 0; k < 6 && targets[i].has[k]; k++) {
            char left[64];
            snprintf(left, sizeof left, "\n  %s", targets[i].has[k]);
            const int n = targets[i].has[k][0] == '-' ? count_of(out, left)
                                                      : count_of(out, targets[i].has[k]);
            if (n != 1) fprintf(stderr, "\n  %s: '%s' %d times\n", args, targets[i].has[k], n);
            CU_ASSERT_EQUAL(n, 1);
        }
        for (int k = 0; k < 6 && targets[i].lacks[k]; k++) {
            char left[64];
            snprintf(left, sizeof left, "\n  %s", targets[i].lacks[k]);
            if (strstr(out, left)) fprintf(stderr, "\n  %s lists %s\n", args, targets[i].lacks[k]);
            CU_ASSERT_PTR_NULL(strstr(out, left));
        }
        free(out);
    }
    expect("bench network --epochs 2", 2, "--epochs does not apply to 'syncsim bench network'",
           NULL);
    expect("bench --help", 0, "syncsim bench TARGET --help", "network ");
}

/* bench network takes what a replay's exchange runs with: --channels splits the ring (on nodes
 * with a NIC per channel, the all-reduce takes about half the time), --gpu shapes the generated
 * hosts as a replay's do and, since the all-reduce computes nothing, changes no time, which the
 * table says. */
static void test_bench_network_channels_gpu(void) {
    const char *base = "bench network --workers 4 --nodes 2 --gpus-per-node 2 --nics-per-node 2 "
                       "--sizes 64MiB --collective ring";
    const char *extra[] = {"", "--channels 2", "--gpu h100"};
    double us[3] = {0};
    for (int i = 0; i < 3; i++) {
        char args[512], *out = NULL;
        snprintf(args, sizeof args, "%s %s", base, extra[i]);
        CU_ASSERT_EQUAL_FATAL(run_syncsim(args, &out), 0);
        const char *row = strstr(out, "\n       67108864 ");
        CU_ASSERT_PTR_NOT_NULL_FATAL(row);
        double size, count, algbw, busbw, wall;
        char type[16], ran[32];
        CU_ASSERT_EQUAL(sscanf(row, "%lf %lf %15s %lf %lf %lf %lf %31s", &size, &count, type,
                               &us[i], &algbw, &busbw, &wall, ran),
                        8);
        if (i == 1) CU_ASSERT_STRING_EQUAL(ran, "ringx2");
        if (i == 2) CU_ASSERT_PTR_NOT_NULL(strstr(out, "its times do not depend on it"));
        free(out);
    }
    SS_CHECK_CLOSE(us[1], 0.55 * us[0], 0, 0.1); /* two NICs: about half the time */
    CU_ASSERT_EQUAL(us[2], us[0]);
    expect("bench network --workers 4 --sizes 1MiB --channels 2 --collective tree", 2,
           "--channels 2 applies to --collective ring, dbtree or auto, not tree", NULL);
}

/* Writes a WikiText-form split of n words drawn (fixed LCG) from a small vocabulary. */
static void write_wiki(const char *dir, const char *name, int n, unsigned seed) {
    static const char *const words[] = {"the", "cat", "sat", "on",    "a",   "mat",
                                        "dog", "ran", "to",  "house", "and", "slept"};
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        /* a bigram habit the model can learn: "the" is followed by an animal or a thing */
        const int w = (int)((seed >> 16) % 12u);
        fprintf(f, " %s%s", words[w], w == 0 ? (seed & 256u ? " cat" : " dog") : "");
        if (i % 12 == 11) fputs(" \n", f);
    }
    fclose(f);
}

/* The test_perplexity column of a run's metrics.csv: up to cap values, with their times. */
static int read_perplexities(const char *dir, double *t, double *ppl, int cap) {
    char path[600], line[512];
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0;
    if (fgets(line, sizeof line, f)) /* header */
        while (n < cap && fgets(line, sizeof line, f)) {
            double v[9];
            if (sscanf(line, "%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", &v[0], &v[1], &v[2], &v[3],
                       &v[4], &v[5], &v[6], &v[7], &v[8]) != 9)
                break;
            t[n] = v[2];
            ppl[n++] = v[8];
        }
    fclose(f);
    return n;
}

/* --target-perplexity: tta_s is the simulated time of the first evaluation at or below the
 * target (lower is better), and the target changes nothing else; it is refused for an image
 * model and beside --target-accuracy. */
static void test_target_perplexity(void) {
    char data[300], args[1500], a[400], b[400];
    snprintf(data, sizeof data, "%s/wiki", tmp_dir);
    CU_ASSERT_EQUAL_FATAL(mkdir(data, 0755), 0);
    write_wiki(data, "wiki.train.tokens", 4000, 1);
    write_wiki(data, "wiki.valid.tokens", 400, 2);
    write_wiki(data, "wiki.test.tokens", 400, 3);
    const char *common = "train --model gpt:1,16,2,8 --dataset wikitext-2 --policy bsp "
                         "--workers 2 --epochs 1 --eval-every 4 --seed 3";
    snprintf(args, sizeof args, "%s --data-dir %s --out %s/ppl0", common, data, tmp_dir);
    expect(args, 0, NULL, NULL);
    snprintf(a, sizeof a, "%s/ppl0", tmp_dir);
    double t[64], ppl[64];
    const int n = read_perplexities(a, t, ppl, 64);
    CU_ASSERT_FATAL(n >= 4);
    CU_ASSERT(ppl[n - 1] < ppl[0]); /* it learns */
    /* a target between the third evaluation's perplexity and the lowest before it */
    double best = ppl[0];
    for (int i = 1; i < 2; i++)
        best = ppl[i] < best ? ppl[i] : best;
    int first = -1;
    double target = 0;
    for (int i = 2; i < n && first < 0; i++)
        if (ppl[i] < best) {
            target = 0.5 * (ppl[i] + best);
            first = i;
        }
    CU_ASSERT_FATAL(first >= 0);
    snprintf(args, sizeof args, "%s --data-dir %s --target-perplexity %.9g --out %s/ppl1", common,
             data, target, tmp_dir);
    expect(args, 0, "tta reached", NULL);
    char cmd[600], *out = NULL;
    snprintf(cmd, sizeof cmd, "grep -o '\"tta_s\":[[:space:]]*[0-9.e+-]*' '%s/ppl1/summary.json'",
             tmp_dir);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, &out), 0);
    double tta = -1;
    CU_ASSERT(out && sscanf(out, "\"tta_s\": %lf", &tta) == 1);
    free(out);
    SS_CHECK_CLOSE(tta, t[first], 1e-9, 0);
    snprintf(b, sizeof b, "%s/ppl1/metrics.csv", tmp_dir);
    snprintf(a, sizeof a, "%s/ppl0/metrics.csv", tmp_dir);
    CU_ASSERT(file_equal(a, b));
    /* unreachable: no tta */
    snprintf(args, sizeof args, "%s --data-dir %s --target-perplexity 1.0001 --out %s/ppl2", common,
             data, tmp_dir);
    expect(args, 0, "tta -;", NULL);
    snprintf(args, sizeof args,
             "%s --data-dir %s --target-perplexity 50 --target-accuracy 0.5 --out %s/ppl3", common,
             data, tmp_dir);
    expect(args, 2, "give one target, not both", NULL);
    snprintf(args, sizeof args,
             "train --model mlp:32 --dataset synthetic --policy bsp --workers 2 --epochs 0.1 "
             "--target-perplexity 5 --out %s/ppl4",
             tmp_dir);
    expect(args, 2, "--target-perplexity applies to language models", "takes --target-accuracy");
}

/* bench coupling: the worker count asked for (8 when none is), the coupled and uncoupled
 * trainings ending with the same parameters */
static void test_bench_coupling_workers(void) {
    expect("bench coupling --model logreg --dataset synthetic --workers 1 --epochs 0.01", 0,
           "1 workers", "identical");
    expect("bench coupling --model logreg --dataset synthetic --workers 3 --epochs 0.01", 0,
           "3 workers", "identical");
    expect("bench coupling --model logreg --dataset synthetic --epochs 0.01", 0, "8 workers",
           "identical");
}

static CU_TestInfo cli_tests[] = {
    {"syncsim: OpenBLAS's SSE kernels replaced on an AVX2/AVX-512 CPU, OPENBLAS_CORETYPE kept",
     test_blas_core},
    {"syncsim: usage errors exit 2 and name the option", test_usage_errors},
    {"syncsim: input errors exit 1 (2 for a request the platform cannot meet)", test_input_errors},
    {"syncsim train: a diverged run exits 3 with complete outputs", test_diverged_run},
    {"syncsim train: identical runs give identical outputs; config.ini re-runs",
     test_identical_runs},
    {"syncsim replay: config.ini holds the options given and re-runs the same replay",
     test_replay_config},
    {"syncsim compare: table, compare.csv, speedup of BSP is 1", test_compare},
    {"syncsim compare: every run failed, exit 1 and no figure", test_compare_all_failed},
    {"syncsim train: a delta that makes SelSync BSP or local SGD is said", test_degenerate_delta},
    {"syncsim train: measured compute leaves the model as the modelled one does",
     test_measured_same_model},
    {"syncsim bench TARGET --help: each target's options, once; others refused",
     test_bench_help_per_target},
    {"syncsim bench network: --channels splits the ring, --gpu changes no time and says so",
     test_bench_network_channels_gpu},
    {"syncsim train: --target-perplexity's tta_s is the first evaluation at or below it",
     test_target_perplexity},
    {"syncsim bench coupling: the workers asked for, the same parameters coupled or not",
     test_bench_coupling_workers},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"syncsim command line", suite_init, suite_clean, NULL, NULL, cli_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}

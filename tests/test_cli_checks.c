/* CUnit suite of the checks syncsim makes before it starts a run, and of what a run leaves in its
 * output directory: options refused before any data is loaded or directory created (strict
 * numbers, duplicate keys, policy rules of the registry, platform and network values), the
 * memory estimate, one BLAS thread whatever the environment or --jobs, and a reused --out
 * directory cleared of the earlier run's outputs. The program runs as a child (build/syncsim). */
#include "ss_test.h"

#include "common/outputs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmp_dir[256];

/* Runs `ENV syncsim ARGS` (ENV may be ""), output into *output (caller frees); the exit code. */
static int run_syncsim(const char *env, const char *args, char **output) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && %s %s/syncsim %s 2>&1", tmp_dir, env, SS_BINARY_DIR,
             args);
    return ss_test_shell(cmd, output);
}

static int exists(const char *name) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    struct stat st;
    return stat(path, &st) == 0;
}

/* The exit code, the fragments of the message, and that OUT (`dir`) was not created. */
static void expect_env(const char *env, const char *args, int code, const char *frag1,
                       const char *frag2, const char *dir) {
    char *out = NULL;
    int rc = run_syncsim(env, args, &out);
    int ok = rc == code && (!frag1 || strstr(out, frag1)) && (!frag2 || strstr(out, frag2)) &&
             (!dir || !exists(dir));
    if (!ok)
        fprintf(stderr,
                "\n  syncsim %s\n  exit %d (expected %d), output:\n%s\n  expected '%s' '%s'%s\n",
                args, rc, code, out, frag1 ? frag1 : "", frag2 ? frag2 : "",
                dir && exists(dir) ? ", and no directory" : "");
    CU_ASSERT(ok);
    free(out);
}

static void expect(const char *args, int code, const char *frag1, const char *frag2,
                   const char *dir) {
    expect_env("", args, code, frag1, frag2, dir);
}

static void write_file(const char *name, const char *text) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    FILE *fp = fopen(path, "w");
    CU_ASSERT_FATAL(fp != NULL);
    fputs(text, fp);
    fclose(fp);
}

static char *read_file(const char *name) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    FILE *fp = fopen(path, "r");
    if (!fp) return NULL;
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return buf;
}

static int suite_init(void) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/ss_test_checks_XXXXXX");
    return mkdtemp(tmp_dir) ? 0 : 1;
}

static int suite_clean(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    return system(cmd) == 0 ? 0 : 1;
}

/* A data set that cannot be loaded: an option error must come first. */
#define NODATA " --dataset mnist --data-dir /nonexistent-syncsim-data --out o5"

static void test_numbers_and_keys(void) {
    expect("train --lr 0x10", 2, "option --lr", "'0x10'", NULL);
    expect("train --lr inf", 2, "option --lr", "'inf'", NULL);
    expect("train --lr nan", 2, "option --lr", "'nan'", NULL);
    expect("train --epochs ' 1'", 2, "option --epochs", NULL, NULL);
    expect("train --batch 0x20", 2, "option --batch", NULL, NULL);
    expect("train --policy selsync --delta 0x1", 2, "--delta", NULL, NULL);
    expect("train --out ''", 2, "--out", "must not be empty", NULL);
    write_file("dup.ini", "[train]\nlr = 0.1\nepochs = 1\nlr = 0.2\n");
    expect("train --config dup.ini", 2, "dup.ini:4", "'lr' is given twice", NULL);
}

static void test_policy_rules(void) {
    expect("train --policy selsync --aggregation ga --selsync-order average-then-step" NODATA, 2,
           "--selsync-order", "--aggregation ga", "o5");
    expect("train --policy dssync --group-size 5 --workers 3" NODATA, 2, "--group-size 5",
           "--workers 3", "o5");
    expect("compare --policies dssync --group-size 9 --workers 4 --out o5", 2, "--group-size 9",
           NULL, "o5");
    expect("compare --help", 0, "--workers N", "(default 8)", NULL);
    expect("compare --workers 1 --out o5", 2, "--workers 1", "at least 2", "o5");
}

static void test_checked_before_data(void) {
    expect("train --policy bsp --workers 2 --bandwidth 5Gbs" NODATA, 2, "--bandwidth", "5Gbs",
           "o5");
    expect("train --policy bsp --workers 2 --latency 5" NODATA, 2, "--latency", NULL, "o5");
    expect("train --policy bsp --workers 2 --platform missing.xml" NODATA, 1, "missing.xml", NULL,
           "o5");
    expect("train --policy bsp --workers 2 --slow-workers 7" NODATA, 2, "--slow-workers", "'7'",
           "o5");
    expect("train --policy bsp --workers 2 --model mlp:0" NODATA, 2, "mlp:0", NULL, "o5");
    expect("train --model mlp:0" NODATA, 2, "mlp:0", NULL, "o5"); /* one worker */
    expect("train --policy bsp --workers 2 --dump-gradients 1,x" NODATA, 2, "--dump-gradients",
           NULL, "o5");
    expect("compare --networks 5Gbps,5Gbs --out o5", 2, "--networks", "5Gbs", "o5");
}

/* Refused before the replicas are allocated or SimGrid loads the platform, with the estimate and
 * the memory available (SYNCSIM_MEMORY_LIMIT stands for the machine's MemAvailable). On the CPU:
 * on a GPU the replicas are counted against the GPU's memory, which the limit does not set. */
static void test_memory_estimate(void) {
    expect_env("SYNCSIM_MEMORY_LIMIT=2GB",
               "train --policy bsp --workers 4096 --batch 1 --dataset synthetic --device cpu "
               "--out o6",
               1, "needs about", "2.00 GB are available", "o6");
    write_file("huge.xml", "<?xml version='1.0'?>\n"
                           "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                           "<platform version=\"4.1\">\n"
                           "  <cluster id=\"c\" prefix=\"h\" suffix=\"\" radical=\"0-3999999\" "
                           "speed=\"1Gf\" bw=\"1Gbps\" lat=\"1us\"/>\n"
                           "</platform>\n");
    expect_env("SYNCSIM_MEMORY_LIMIT=16GB",
               "train --policy bsp --workers 2 --platform huge.xml --dataset synthetic --out o6", 1,
               "4000000 simulated hosts", "16.00 GB are available", "o6");
    /* one worker alone: its model's activations at a large batch (about 5.2 GB for vgg:11 at
     * 4096 samples of 1x28x28) */
    expect_env("SYNCSIM_MEMORY_LIMIT=1GB",
               "train --model vgg:11 --batch 4096 --dataset synthetic --device cpu --out o6", 1,
               "the model with batch 4096 and its momentum", "1.00 GB are available", "o6");
    /* bench coupling's replicas, as train's */
    expect_env("SYNCSIM_MEMORY_LIMIT=1MB", "bench coupling --dataset synthetic --epochs 0.01", 1,
               "8 replicas of the model with batch 64", "0.00 GB are available", NULL);
    /* bench kernels too, before it creates the model (its logits alone 1.3 GB at 64) */
    expect_env("SYNCSIM_MEMORY_LIMIT=1GB",
               "bench kernels --device cpu --model gpt:2,128,2,512 --batch 64 --seconds 0.1", 1,
               "the model with batch 64 and its momentum", "1.00 GB are available", NULL);
    expect_env("SYNCSIM_MEMORY_LIMIT=lots",
               "train --policy bsp --workers 2 --dataset synthetic "
               "--out o6",
               2, "SYNCSIM_MEMORY_LIMIT", NULL, "o6");
}

#define TINY "--device cpu --dataset synthetic --model mlp:16 --epochs 0.05 --seed 3 "

/* bench kernels --layers: a row for each layer that computed, with the conv -> ReLU -> max-pool
 * blocks the CPU computes as one timed on the conv's row (their ReLU and pool rows absent), and
 * the convolutions' rate; a language model's embedding, block layers, head and loss. */
static void test_bench_layers(void) {
    char *out = NULL;
    CU_ASSERT_EQUAL_FATAL(run_syncsim("OPENBLAS_NUM_THREADS=1",
                                      "bench kernels --device cpu --model cnn:16,32,16 --batch 8 "
                                      "--layers --seconds 0.2",
                                      &out),
                          0);
    const char *table = strstr(out, "layers of cnn:16,32,16, batch 8");
    CU_ASSERT_PTR_NOT_NULL_FATAL(table);
    const char *rows[] = {"\nconv1 ",  "\nconv2 ", "\ndense1 ",
                          "\ndense2 ", "\nloss ",  "\nconvolutions: "};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(table, rows[i]));
    CU_ASSERT_PTR_NULL(strstr(table, "\nrelu1 "));
    CU_ASSERT_PTR_NULL(strstr(table, "\npool2 "));
    /* one core's FMA peak, where AVX2 with FMA (or AVX-512F) runs: a positive rate */
    const char *peak = strstr(out, "fused multiply-add peak (");
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (__builtin_cpu_supports("avx512f") ||
        (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
        CU_ASSERT_PTR_NOT_NULL_FATAL(peak);
        const char *colon = strstr(peak, "): ");
        CU_ASSERT_PTR_NOT_NULL_FATAL(colon);
        CU_ASSERT(strtod(colon + 3, NULL) > 0.0);
        CU_ASSERT(peak < table); /* printed with the SGEMM line, before the layers */
    }
#endif
    (void)peak;
    free(out);
    CU_ASSERT_EQUAL_FATAL(run_syncsim("OPENBLAS_NUM_THREADS=1",
                                      "bench kernels --device cpu --model gpt:1,16,2,8 --batch 2 "
                                      "--layers --seconds 0.1",
                                      &out),
                          0);
    table = strstr(out, "layers of gpt:1,16,2,8, batch 2");
    CU_ASSERT_PTR_NOT_NULL_FATAL(table);
    const char *gpt_rows[] = {"\nembed ",   "\nh0.norm1 ", "\nh0.qkv ", "\nh0.attn ",
                              "\nh0.proj ", "\nh0.norm2 ", "\nh0.fc1 ", "\nh0.gelu ",
                              "\nh0.fc2 ",  "\nnorm_f ",   "\nhead ",   "\nloss "};
    for (size_t i = 0; i < sizeof gpt_rows / sizeof gpt_rows[0]; i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(table, gpt_rows[i]));
    free(out);
}

/* On more than one BLAS thread syncsim shortens OpenBLAS's idle spin to 2^18 cycles (it
 * executes itself again with OPENBLAS_THREAD_TIMEOUT set, cli/cli.c), unless the user set it;
 * on one there is no spin and it leaves OpenBLAS as it is. bench kernels says which. */
static void test_blas_spin(void) {
    static const struct {
        const char *env, *want;
    } cases[] = {
        {"env -u OPENBLAS_THREAD_TIMEOUT OPENBLAS_NUM_THREADS=2",
         "idle threads spin 2^18 cycles (OPENBLAS_THREAD_TIMEOUT)"},
        {"OPENBLAS_THREAD_TIMEOUT=12 OPENBLAS_NUM_THREADS=2", "idle threads spin 2^12 cycles"},
        {"env -u OPENBLAS_THREAD_TIMEOUT OPENBLAS_NUM_THREADS=1",
         "idle threads spin 2^28 cycles (OPENBLAS_THREAD_TIMEOUT unset"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL;
        CU_ASSERT_EQUAL(
            run_syncsim(cases[i].env,
                        "bench kernels --device cpu --model mlp:16 --batch 8 --seconds 0.1", &out),
            0);
        if (!strstr(out, cases[i].want))
            fprintf(stderr, "\n  %s: expected '%s' in:\n%s\n", cases[i].env, cases[i].want, out);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, cases[i].want));
        free(out);
    }
}

/* One BLAS thread in every emulated run, whatever OPENBLAS_NUM_THREADS and --jobs say. */
/* One worker alone: a fraction of an epoch that rounds to no step still trains one, as a simulated
 * run does (it reported a NaN loss after 0 steps). */
static void test_single_one_step(void) {
    expect("train --model mlp:16 --dataset synthetic --epochs 0.001 --out o7", 0, "after 1 steps",
           "ok: test accuracy", NULL);
}

static void test_blas_threads(void) {
    char *out = NULL;
    int rc = run_syncsim("OPENBLAS_NUM_THREADS=2",
                         "train --policy bsp --workers 2 " TINY "--out b1", &out);
    CU_ASSERT(rc == 0);
    free(out);
    char *sum = read_file("b1/summary.json");
    CU_ASSERT_FATAL(sum != NULL);
    CU_ASSERT(strstr(sum, " 1 threads)") != NULL);
    free(sum);
    const char *cmp = "compare --policies bsp,selsync --networks 5Gbps --partitions iid " TINY;
    char args[512];
    for (int j = 1; j <= 2; j++) {
        snprintf(args, sizeof args, "%s --jobs %d --out c%d", cmp, j, j);
        rc = run_syncsim("OPENBLAS_NUM_THREADS=2", args, &out);
        CU_ASSERT(rc == 0);
        free(out);
    }
    char *a = read_file("c1/compare.csv"), *b = read_file("c2/compare.csv");
    CU_ASSERT_FATAL(a && b);
    CU_ASSERT_STRING_EQUAL(a, b);
    free(a);
    free(b);
}

/* A sweep point's config.ini re-run by train gives the sweep's summary, byte for byte. */
static void test_sweep_point_rerun(void) {
    write_file("sw.ini", "[sweep]\nname = s\n[grid]\nseed = 3\n[fixed]\npolicy = bsp\n"
                         "workers = 2\ndataset = synthetic\nmodel = mlp:16\nepochs = 0.05\n");
    char *out = NULL;
    int rc = run_syncsim("OPENBLAS_NUM_THREADS=2", "sweep sw.ini --out sw", &out);
    CU_ASSERT(rc == 0);
    free(out);
    rc = run_syncsim("OPENBLAS_NUM_THREADS=2",
                     "train --config 'sw/points/seed=3/config.ini' --out rerun", &out);
    CU_ASSERT(rc == 0);
    free(out);
    char *a = read_file("sw/points/seed=3/summary.json"), *b = read_file("rerun/summary.json");
    CU_ASSERT_FATAL(a && b);
    CU_ASSERT_STRING_EQUAL(a, b);
    free(a);
    free(b);
}

/* A reused directory: the earlier run's summary.json, steps.trace and platform.xml go, the
 * user's other files stay, and the "outputs:" line names only what was written. */
static void test_reused_out(void) {
    char cmd[700];
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/r' && cp '%s/platforms/cluster_5gbps_16.xml' '%s/p.xml'", tmp_dir,
             SS_SOURCE_DIR, tmp_dir);
    CU_ASSERT_FATAL(system(cmd) == 0);
    write_file("r/summary.json", "{\"schema\": 1, \"status\": \"ok\", \"policy\": \"old\"}\n");
    write_file("r/steps.trace", "old\n");
    write_file("r/platform.xml", "old\n");
    write_file("r/notes.txt", "mine\n");
    char *out = NULL;
    int rc = run_syncsim(
        "", "train --policy bsp --workers 2 " TINY "--trace=false --platform p.xml --out r", &out);
    CU_ASSERT(rc == 0);
    CU_ASSERT(strstr(out, "outputs: r/{config.ini,metrics.csv,summary.json}") != NULL);
    free(out);
    CU_ASSERT(!exists("r/steps.trace"));
    CU_ASSERT(!exists("r/platform.xml"));
    CU_ASSERT(exists("r/notes.txt"));
    char *sum = read_file("r/summary.json");
    CU_ASSERT_FATAL(sum != NULL);
    CU_ASSERT(strstr(sum, "\"policy\":\t\"bsp\"") != NULL);
    free(sum);
}

/* outputs_clear: the named files only, a missing one is fine. */
static void test_outputs_clear(void) {
    run_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.out_dir, sizeof cfg.out_dir, "%s", tmp_dir);
    write_file("summary.json", "{}");
    write_file("keep.json", "{}");
    static const char *const names[] = {"summary.json", "metrics.csv", NULL};
    CU_ASSERT(outputs_clear(&cfg, names) == 0);
    CU_ASSERT(!exists("summary.json"));
    CU_ASSERT(exists("keep.json"));
}

/* A number of summary.json ("key":<tab>value); NAN when absent or null. */
static double summary_number(const char *text, const char *key) {
    char pat[96];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    if (!p) return NAN;
    p += strlen(pat);
    while (*p == '\t' || *p == ' ')
        p++;
    char *end;
    double v = strtod(p, &end);
    return end == p ? NAN : v;
}

/* The largest Delta in a trace after step `after` (steps.trace: column 9). */
static double trace_max_delta(const char *trace, long after) {
    char cmd[700];
    snprintf(cmd, sizeof cmd,
             "awk '!/^#/ && NF >= 13 && $1 > %ld { if (!n++ || $9 > m) m = $9 } END { printf "
             "\"%%.17g\", m }' '%s/%s'",
             after, tmp_dir, trace);
    FILE *p = popen(cmd, "r");
    double v = NAN;
    if (p && fscanf(p, "%lf", &v) != 1) v = NAN;
    if (p) pclose(p);
    return v;
}

/* BSP keeps the replicas identical: the workers' own accuracies are the consensus accuracy. */
static void test_worker_accuracy(void) {
    char *out = NULL;
    int rc = run_syncsim("", "train --policy bsp --workers 3 " TINY "--out w1", &out);
    CU_ASSERT(rc == 0);
    free(out);
    char *sum = read_file("w1/summary.json");
    CU_ASSERT_FATAL(sum != NULL);
    double consensus = summary_number(sum, "test_accuracy");
    double workers = summary_number(sum, "worker_test_accuracy_mean");
    CU_ASSERT(consensus > 0);
    CU_ASSERT_DOUBLE_EQUAL(workers, consensus, 1e-12);
    CU_ASSERT(isnan(summary_number(sum, "delta_p50"))); /* not a selsync run: null */
    free(sum);
}

/* SelSync's Delta after the warm-up (W = 5 steps) in the summary is the trace's; --delta auto:R
 * reports its target, the delta it chose and the LSSR after the calibration. */
static void test_delta_summary(void) {
    expect("train --policy selsync --delta auto:1.5", 2, "--delta", "auto:R", NULL);
    expect("train --policy selsync --delta auto:", 2, "--delta", NULL, NULL);
    expect("train --policy selsync --delta nan", 2, "--delta", NULL, NULL);
    char *out = NULL;
    int rc = run_syncsim("",
                         "train --policy selsync --workers 4 --ewma-window 5 --delta auto:0.5 "
                         "--dataset synthetic --model mlp:16 --epochs 2 --out d1",
                         &out);
    CU_ASSERT(rc == 0);
    CU_ASSERT(strstr(out, "target LSSR 0.500") != NULL);
    free(out);
    char *sum = read_file("d1/summary.json");
    CU_ASSERT_FATAL(sum != NULL);
    const double p50 = summary_number(sum, "delta_p50"), p90 = summary_number(sum, "delta_p90");
    const double p99 = summary_number(sum, "delta_p99"), max = summary_number(sum, "delta_max");
    CU_ASSERT(p50 <= p90 && p90 <= p99 && p99 <= max);
    SS_CHECK_CLOSE(max, trace_max_delta("d1/steps.trace", 5), 0, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(summary_number(sum, "delta_target_lssr"), 0.5, 1e-15);
    const double chosen = summary_number(sum, "delta_chosen");
    CU_ASSERT(chosen > -1 && chosen <= max * (1 + 1e-12) + 1e-300);
    const double lssr = summary_number(sum, "lssr_after_calibration");
    CU_ASSERT(lssr >= 0 && lssr <= 1);
    free(sum);
}

/* A step's largest Delta and its decision, per step, from a trace (steps 1..n). */
static long trace_steps(const char *trace, double *max_delta, int *decision, long cap) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, trace);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[1024];
    long n = 0;
    while (fgets(line, sizeof line, f)) {
        long step;
        int worker, dec;
        double d;
        if (line[0] == '#' ||
            sscanf(line, "%ld %d %*g %*g %*g %*g %*g %*g %lg %d", &step, &worker, &d, &dec) != 4 ||
            step < 1 || step > cap)
            continue;
        if (step > n) {
            for (long s = n; s < step; s++)
                max_delta[s] = -INFINITY, decision[s] = -1;
            n = step;
        }
        if (d > max_delta[step - 1]) max_delta[step - 1] = d;
        if (decision[step - 1] < 0) decision[step - 1] = dec;
        CU_ASSERT_EQUAL(decision[step - 1], dec); /* every worker decides alike */
    }
    fclose(f);
    return n;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --delta auto:R --delta-every K: after the warm-up (W = 5 steps) and the calibration (10 steps,
 * all synchronized), every step synchronizes exactly when its largest Delta reaches a delta that
 * is chosen again every K steps, just above the R-quantile of the last K steps' largest Delta:
 * recomputed here from the trace's Delta column; the trace replays to the same time. With a
 * fixed --delta the option is refused. */
static void test_delta_every(void) {
    expect("train --policy selsync --delta 0.3 --delta-every 10", 2, "--delta-every", "auto:R",
           NULL);
    expect("train --policy bsp --delta-every 10", 2, "--delta-every", NULL, NULL);
    char *out = NULL;
    int rc = run_syncsim("",
                         "train --policy selsync --workers 4 --ewma-window 5 --delta auto:0.7 "
                         "--delta-every 12 --dataset synthetic --model mlp:16 --epochs 3 "
                         "--out d2",
                         &out);
    CU_ASSERT(rc == 0);
    CU_ASSERT(out && strstr(out, "every 12 steps") != NULL);
    free(out);
    enum { CAP = 4096, K = 12, WARM = 5, CAL = 10 };
    static double mx[CAP], window[K];
    static int dec[CAP];
    const long n = trace_steps("d2/steps.trace", mx, dec, CAP);
    CU_ASSERT_FATAL(n > WARM + CAL + 3 * K);
    for (long s = 0; s < WARM + CAL; s++)
        CU_ASSERT_EQUAL(dec[s], 1);
    double delta = 0, lo = INFINITY, hi = -INFINITY;
    long choices = 0, wrong = 0, local = 0;
    for (long s = WARM + CAL; s < n; s++) { /* s: 0-based, the step s + 1 */
        const long since = s - (WARM + CAL);
        if (since % K == 0) { /* chosen from the K steps before (the calibration's 10 first) */
            const long m = since == 0 ? CAL : K;
            memcpy(window, mx + s - m, sizeof(double) * (size_t)m);
            qsort(window, (size_t)m, sizeof(double), compare_double);
            long k = (long)ceil(0.7 * (double)m) - 1;
            delta = nextafter(window[k], INFINITY);
            lo = delta < lo ? delta : lo, hi = delta > hi ? delta : hi;
            choices++;
        }
        wrong += dec[s] != (mx[s] >= delta);
        local += dec[s] == 0;
    }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT(local > 0 && local < n - (WARM + CAL));
    char *sum = read_file("d2/summary.json");
    CU_ASSERT_FATAL(sum != NULL);
    CU_ASSERT_EQUAL((long)summary_number(sum, "delta_choices"), choices);
    /* cJSON writes 15 digits when they read back within an ulp or so: the decisions above are
     * exact, the summary's numbers within 1e-14 */
    SS_CHECK_CLOSE(summary_number(sum, "delta_chosen"), delta, 0, 1e-14);
    SS_CHECK_CLOSE(summary_number(sum, "delta_chosen_min"), lo, 0, 1e-14);
    SS_CHECK_CLOSE(summary_number(sum, "delta_chosen_max"), hi, 0, 1e-14);
    free(sum);
    /* the trace replays to the same simulated time (Deltas charged at 8 bytes there too) */
    rc = run_syncsim("", "replay --trace d2/steps.trace --out d2r", &out);
    CU_ASSERT(rc == 0);
    CU_ASSERT(out && strstr(out, "relative difference 0\n") != NULL);
    free(out);
}

/* The repository points at nothing outside it. */
static void test_docs_in_repository(void) {
    char cmd[700];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && grep -rnE '\\.\\./shared|SEEDS[.]md|DESIGN[.]md|issue [0-9]' "
             "--include='*.c' --include='*.h' --include='*.md' --include='*.txt' "
             "--include='*.sh' --include='*.py' --exclude-dir=build . >/dev/null",
             SS_SOURCE_DIR);
    CU_ASSERT(system(cmd) != 0); /* grep finds nothing */
    snprintf(cmd, sizeof cmd, "grep -q 'docs/POLICIES.md' '%s/README.md'", SS_SOURCE_DIR);
    CU_ASSERT(system(cmd) == 0);
}

static CU_TestInfo check_tests[] = {
    {"numbers are decimal; a --config key is given once; --out is not empty",
     test_numbers_and_keys},
    {"the policies' rules (registry checks) in train and compare; compare --workers",
     test_policy_rules},
    {"bad platform, network, straggler, model and dump options before any data or directory",
     test_checked_before_data},
    {"memory estimate: too many replicas or hosts, or one model too large, are refused up front",
     test_memory_estimate},
    {"train, one worker: at least one step", test_single_one_step},
    {"OpenBLAS's idle spin: 2^18 cycles on BLAS threads unless the user set it, as is on one",
     test_blas_spin},
    {"bench kernels --layers: the layers that computed, a fused block on its conv",
     test_bench_layers},
    {"one BLAS thread: the summary says so; compare --jobs 1 and 2 write the same compare.csv",
     test_blas_threads},
    {"a sweep point's config.ini re-run by train gives the same summary", test_sweep_point_rerun},
    {"a reused --out directory keeps no output of the earlier run", test_reused_out},
    {"outputs_clear removes the named files only", test_outputs_clear},
    {"bsp: the workers' mean accuracy is the consensus accuracy", test_worker_accuracy},
    {"selsync: Delta percentiles as in the trace; --delta auto:R reports target and result",
     test_delta_summary},
    {"selsync: --delta-every K chooses delta again from the last K steps, as the trace says",
     test_delta_every},
    {"no file points outside the repository; README links docs/POLICIES.md",
     test_docs_in_repository},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"syncsim checks and outputs", suite_init, suite_clean, NULL, NULL, check_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}

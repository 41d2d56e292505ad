/* CUnit suite of traces/: the trace format (round trip, bad input with line numbers, version
 * mismatch), the model profiles (published parameter counts), the CSV import of real logs, and
 * replay: a replay of an emulation's trace on the recorded platform reproduces its simulated time
 * (relative difference <= 1e-9) for every policy, and scale-out is deterministic. Emulations and
 * replays each run in their own process (isolate_call), on tiny synthetic runs. */
#include "cli/options.h"
#include "cli/commands.h"
#include "common/afile.h"
#include "common/status.h"
#include "common/summary.h"
#include "common/isolate.h"
#include "ss_test.h"
#include "traces/profile.h"
#include "traces/replay.h"
#include "traces/trace.h"

#include <dirent.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ---- */

static trace *read_text(const char *text, int *rc) {
    FILE *fp = fmemopen((void *)text, strlen(text), "r");
    SS_ASSERT(fp);
    trace *t = NULL;
    *rc = trace_read(fp, "mem.trace", &t);
    fclose(fp);
    return t;
}

/* A small valid trace as text: 2 workers x 2 steps of SelSync; with_layers: and the "# layer"
 * lines of a step (two layers holding the 10 parameters). */
static const sim_layer_cost small_layers[3] = {
    {.fwd_flops = 1.0 / 3.0,
     .bwd_flops = 2,
     .fwd_bytes = 3,
     .bwd_bytes = 4,
     .param_bytes = 32,
     .kernels = 2,
     .kind = SIM_LAYER_MATMUL,
     .gemm_n = 4,
     .gemm_k = 2},
    {.fwd_flops = 5, .bwd_flops = 6, .param_bytes = 8, .kernels = 1, .kind = SIM_LAYER_NORM},
    {.fwd_flops = 9, .fwd_bytes = 40, .bwd_bytes = 72, .kernels = 1, .kind = SIM_LAYER_MAXPOOL}};

static char *small_trace_text_layers(int with_layers) {
    char *text = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&text, &len);
    policy_config pc;
    policy_config_default(&pc);
    pc.coll.algo = SIM_ALLREDUCE_RING; /* written for the ring, the default before auto */
    pc.kind = POLICY_SELSYNC;
    pc.workers = 2;
    pc.steps = 2;
    pc.seed = 42;
    trace_meta meta = {.param_count = 10, .param_bytes = 40, .sample_bytes = 5};
    snprintf(meta.source, sizeof meta.source, "emulation");
    if (with_layers) meta.layers = small_layers, meta.n_layers = 3;
    trace_writer tw;
    trace_writer_begin(&tw, fp, &meta, &pc, "[train]\nbandwidth = 5Gbps\n");
    for (long s = 1; s <= 2; s++)
        for (int w = 1; w >= 0; w--) { /* completion order, not (step, worker) order */
            step_record r = {.step = s,
                             .worker = w,
                             .start_s = 0.1 * s,
                             .compute_s = 1.0 / 3.0 + w,
                             .flops = 12345.0 + w,
                             .grad_norm = 0.1 + s,
                             .decision = s == 2,
                             .samples = 8,
                             .loss = 2.5};
            trace_writer_record(&tw, &r);
        }
    trace_writer_end(&tw, 1.0 / 7.0);
    fclose(fp);
    return text;
}

static char *small_trace_text(void) {
    return small_trace_text_layers(0);
}

/* The text with line `line` (1-based) replaced by `repl` (NULL: removed), or cut after it. */
static char *edit_line(const char *text, int line, const char *repl, int cut_after) {
    char *out = ss_malloc(strlen(text) + (repl ? strlen(repl) : 0) + 2);
    out[0] = '\0';
    int n = 0;
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, "\n");
        n++;
        if (n == line && !cut_after) {
            if (repl) {
                strcat(out, repl);
                strcat(out, "\n");
            }
        } else {
            strncat(out, p, len + (p[len] == '\n'));
        }
        if (cut_after && n == line) break;
        p += len + (p[len] == '\n');
    }
    return out;
}

static int count_lines(const char *text) {
    int n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

/* ---- format ---- */

static void test_trace_round_trip(void) {
    char *text = small_trace_text();
    int rc;
    trace *t = read_text(text, &rc);
    CU_ASSERT_EQUAL_FATAL(rc, SS_OK);
    CU_ASSERT_EQUAL(t->workers, 2);
    CU_ASSERT_EQUAL(t->steps, 2);
    CU_ASSERT_EQUAL(t->records, 4);
    CU_ASSERT_EQUAL(t->steps_done, 2);
    CU_ASSERT_EQUAL(t->pc.kind, POLICY_SELSYNC);
    CU_ASSERT_EQUAL(t->pc.seed, 42);
    CU_ASSERT(t->meta.param_bytes == 40 && t->meta.sample_bytes == 5);
    /* every number reads back bit for bit */
    CU_ASSERT(trace_cell_at(t, 1, 0)->compute_s == 1.0 / 3.0);
    CU_ASSERT(trace_cell_at(t, 2, 1)->compute_s == 1.0 / 3.0 + 1);
    CU_ASSERT(trace_cell_at(t, 2, 1)->flops == 12346.0);
    CU_ASSERT(t->sim_time_s == 1.0 / 7.0);
    CU_ASSERT_EQUAL(t->decisions[0], 0);
    CU_ASSERT_EQUAL(t->decisions[1], 1);
    CU_ASSERT_STRING_EQUAL(trace_config_get(t, "bandwidth"), "5Gbps");
    SS_CHECK_CLOSE(trace_sync_fraction(t), 0.5, 0, 0);
    CU_ASSERT_EQUAL(t->n_layers, 0);
    trace_free(t);
    free(text);
    /* the "# layer" lines of a step read back bit for bit */
    text = small_trace_text_layers(1);
    t = read_text(text, &rc);
    CU_ASSERT_EQUAL_FATAL(rc, SS_OK);
    CU_ASSERT_EQUAL_FATAL(t->n_layers, 3);
    CU_ASSERT_EQUAL(memcmp(t->layers, small_layers, sizeof small_layers), 0);
    trace_free(t);
    free(text);
}

/* Each corruption gives SS_EINPUT and a message naming the line (or the version). */
static void expect_error(const char *text, const char *needle) {
    int rc;
    trace *t = read_text(text, &rc);
    CU_ASSERT_EQUAL(rc, SS_EINPUT);
    CU_ASSERT_PTR_NULL(t);
    if (!strstr(ss_error_message(), needle)) {
        fprintf(stderr, "\n  trace_read: '%s' lacks '%s'\n", ss_error_message(), needle);
        CU_FAIL("trace_read message");
    }
    trace_free(t);
}

static void test_trace_bad_input(void) {
    char *text = small_trace_text();
    const int n = count_lines(text);
    char *e;
    /* truncated: cut anywhere before the end line */
    e = edit_line(text, n - 1, NULL, 1);
    expect_error(e, "truncated");
    free(e);
    /* truncated inside a record line (no newline at the end) */
    e = edit_line(text, n - 3, NULL, 1);
    e[strlen(e) - 12] = '\0';
    expect_error(e, "truncated");
    free(e);
    /* a corrupt record: the message names its line */
    char want[64];
    snprintf(want, sizeof want, "mem.trace:%d:", n - 3);
    e = edit_line(text, n - 3, "2 0 0.2 0.3 0 0 x12 0.1 0 1 8 0 2.5", 0);
    expect_error(e, want);
    free(e);
    e = edit_line(text, n - 3, "2 7 0.2 0.3 0 0 1 0.1 0 1 8 0 2.5", 0);
    expect_error(e, "worker out of range");
    free(e);
    e = edit_line(text, n - 3, "2 0 0.2 0.3 0 0 1", 0);
    expect_error(e, "13 fields");
    free(e);
    /* a duplicate record */
    e = edit_line(text, n - 3, "1 0 0.2 0.3 0 0 1 0.1 0 1 8 0 2.5", 0);
    expect_error(e, "duplicate record");
    free(e);
    /* the end line counts differently */
    e = edit_line(text, n, "# end records = 5", 0);
    expect_error(e, "counts 5 records");
    free(e);
    /* version mismatch, with a hint */
    e = edit_line(text, 1, "# syncsim-trace 3", 0);
    expect_error(e, "newer syncsim");
    free(e);
    e = edit_line(text, 1, "# syncsim steps trace, format 1", 0);
    expect_error(e, "re-record");
    free(e);
    e = edit_line(text, 1, "hello", 0);
    expect_error(e, "not a syncsim trace");
    free(e);
    expect_error("", "empty");
    /* a header asking for too many cells: the reason follows the file and line intact */
    int steps_line = 1;
    for (const char *q = text; strncmp(q, "# policy steps = ", 17); q = strchr(q, '\n') + 1)
        steps_line++;
    e = edit_line(text, steps_line, "# policy steps = 100000000", 0);
    expect_error(e, "mem.trace:");
    expect_error(e, "a trace of 2 workers x 100000000 steps is outside what fits in memory");
    free(e);
    /* a missing policy line */
    e = edit_line(text, 8, "# policy nonsense = 3", 0);
    expect_error(e, "mem.trace:8:");
    free(e);
    free(text);
    /* layer lines: the line named, the kinds listed; their parameters must be the model's */
    text = small_trace_text_layers(1);
    int layer_line = 1;
    for (const char *q = text; strncmp(q, "# layer ", 8); q = strchr(q, '\n') + 1)
        layer_line++;
    snprintf(want, sizeof want, "mem.trace:%d:", layer_line);
    e = edit_line(text, layer_line, "# layer gemm 1 2 3 4 32 2 4 2", 0);
    expect_error(e, want);
    expect_error(e, "other, matmul, norm, conv or maxpool");
    free(e);
    e = edit_line(text, layer_line, "# layer matmul 1 2 3 -4 32 2 4 2", 0);
    expect_error(e, "finite numbers >= 0");
    free(e);
    e = edit_line(text, layer_line, "# layer matmul 1 2 3 4 32 2 4", 0);
    expect_error(e, "malformed layer line");
    free(e);
    e = edit_line(text, layer_line, "# layer matmul 1 2 3 4 36 2 4 2", 0);
    expect_error(e, "the layer lines hold 44 parameter bytes, meta param_bytes says 40");
    free(e);
    free(text);
}

/* A diverged step's grad_norm, delta and loss are nan or inf, as the writer's %.17g prints them:
 * they read back as such; in any other column they are refused, naming the line. */
static void test_trace_non_finite(void) {
    char *text = small_trace_text();
    const int n = count_lines(text);
    char *e = edit_line(text, n - 3, "2 1 0.2 0.3 0 0 1 nan -nan 1 8 0 inf", 0);
    int rc;
    trace *t = read_text(e, &rc);
    CU_ASSERT_EQUAL_FATAL(rc, SS_OK);
    CU_ASSERT(isnan(trace_cell_at(t, 2, 1)->grad_norm));
    CU_ASSERT(isinf(trace_cell_at(t, 2, 1)->loss) && trace_cell_at(t, 2, 1)->loss > 0);
    trace_free(t);
    free(e);
    e = edit_line(text, n - 3, "2 1 0.2 0.3 0 0 1 -inf 0 1 8 0 -nan", 0);
    t = read_text(e, &rc);
    CU_ASSERT_EQUAL(rc, SS_OK);
    if (t) CU_ASSERT(isinf(trace_cell_at(t, 2, 1)->grad_norm));
    trace_free(t);
    free(e);
    char want[64];
    snprintf(want, sizeof want, "mem.trace:%d: not a finite number: inf", n - 3);
    e = edit_line(text, n - 3, "2 1 0.2 inf 0 0 1 0.1 0 1 8 0 2.5", 0);
    expect_error(e, want);
    free(e);
    e = edit_line(text, n - 3, "2 1 nan 0.3 0 0 1 0.1 0 1 8 0 2.5", 0);
    expect_error(e, "not a finite number: nan");
    free(e);
    e = edit_line(text, n - 3, "2 1 0.2 0.3 0 0 1 NaN 0 1 8 0 2.5", 0); /* printf's spelling only */
    expect_error(e, "not a finite number: NaN");
    free(e);
    free(text);
}

/* The shipped sample traces and the fuzzing seed read in the current version. */
static void test_trace_samples_load(void) {
    const char *files[] = {"traces/samples/bsp_logreg_4.trace",
                           "traces/samples/selsync_mlp_4.trace",
                           "traces/fuzz/corpus_trace/bsp4.trace"};
    for (int i = 0; i < 3; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", SS_SOURCE_DIR, files[i]);
        trace *t = NULL;
        int rc = trace_load(path, &t);
        if (rc != SS_OK) fprintf(stderr, "\n  %s\n", ss_error_message());
        CU_ASSERT_EQUAL(rc, SS_OK);
        if (t) CU_ASSERT(t->steps_done == t->pc.steps && t->sim_time_s > 0);
        trace_free(t);
    }
}

/* ---- profiles ---- */

static void test_profiles_published_counts(void) {
    const char *names[] = {"resnet101", "vgg11", "alexnet", "transformer"};
    for (int i = 0; i < 4; i++) {
        model_profile p;
        int rc = profile_find(names[i], &p);
        if (rc != SS_OK) fprintf(stderr, "\n  %s\n", ss_error_message());
        CU_ASSERT_EQUAL_FATAL(rc, SS_OK);
        CU_ASSERT(p.published_params > 0);
        double rel = fabs(p.params - p.published_params) / p.published_params;
        fprintf(stderr, "\n  %-12s %12.0f params (published %.0f, %.2f%%), %.4g GFLOP fwd/sample",
                names[i], p.params, p.published_params, 100 * rel,
                p.forward_flops_per_sample / 1e9);
        CU_ASSERT(rel <= 0.01);
        CU_ASSERT(p.backward_flops_per_sample > 1.9 * p.forward_flops_per_sample);
        CU_ASSERT(p.backward_flops_per_sample <= 2.0 * p.forward_flops_per_sample);
        CU_ASSERT(p.sample_bytes > 0);
        profile_free(&p);
    }
}

static void expect_profile_error(const char *text, const char *needle) {
    FILE *fp = fmemopen((void *)text, strlen(text), "r");
    model_profile p;
    int rc = profile_read(fp, "mem.profile", &p);
    fclose(fp);
    CU_ASSERT_EQUAL(rc, SS_EINPUT);
    if (!strstr(ss_error_message(), needle)) {
        fprintf(stderr, "\n  profile_read: '%s' lacks '%s'\n", ss_error_message(), needle);
        CU_FAIL("profile_read message");
    }
}

static void test_profile_bad_input(void) {
    const char *ok =
        "syncsim-profile 1\nname tiny\nlayer a 10 100\nlayer b 5 50 70\ntotal 15 150\n";
    FILE *fp = fmemopen((void *)ok, strlen(ok), "r");
    model_profile p;
    CU_ASSERT_EQUAL(profile_read(fp, "mem.profile", &p), SS_OK);
    fclose(fp);
    CU_ASSERT(p.params == 15 && p.forward_flops_per_sample == 150);
    CU_ASSERT(p.backward_flops_per_sample == 2 * 100 + 70);
    CU_ASSERT(profile_step_flops(&p, 4) == 4 * (150 + 270));
    expect_profile_error("syncsim-profile 5\n", "version 5");
    /* version 3: a layer kind and the matrix shape; version 2 lines are refused in it */
    expect_profile_error("syncsim-profile 3\nname t\nlayer a 10 100 - 8 12 1\ntotal 10 100\n",
                         "a version 3 layer line is");
    expect_profile_error(
        "syncsim-profile 3\nname t\nlayer a 10 100 - 8 12 1 dense 4 8\ntotal 10 100\n",
        "unknown layer kind (valid: conv, linear, norm");
    expect_profile_error(
        "syncsim-profile 3\nname t\nlayer a 10 100 - 8 12 1 conv -4 8\ntotal 10 100\n",
        "mem.profile:3: layer counts must be numbers >= 0 in layer a");
    expect_profile_error("name x\n", "not a syncsim profile");
    expect_profile_error("syncsim-profile 1\nname t\nlayer a 10 100\n", "truncated");
    expect_profile_error("syncsim-profile 1\nname t\nlayer a 10 100\ntotal 11 100\n",
                         "mem.profile:4:");
    expect_profile_error("syncsim-profile 1\nname t\nlayer a -1 100\ntotal 11 100\n",
                         "mem.profile:3:");
    expect_profile_error("syncsim-profile 1\nname t\nbogus 3\n", "unknown key");
    expect_profile_error("syncsim-profile 1\nname t\nlayer a 0 100\ntotal 0 100\n",
                         "no parameters");
}

/* ---- real logs ---- */

static void test_import_csv(void) {
    const char *csv = "# a real run\nworker,step,compute_s,sync_s,decision,loss\n"
                      "0,1,0.5,0.2,sync,2.0\n1,1,0.6,0.1,sync,2.1\n"
                      "0,2,0.5,0,local,1.9\n1,2,0.7,0,local,1.8\n";
    policy_config pc;
    policy_config_default(&pc);
    pc.coll.algo = SIM_ALLREDUCE_RING; /* written for the ring, the default before auto */
    FILE *fp = fmemopen((void *)csv, strlen(csv), "r");
    trace *t = NULL;
    int rc = trace_import_csv_stream(fp, "log.csv", &pc, 4e6, &t);
    fclose(fp);
    CU_ASSERT_EQUAL_FATAL(rc, SS_OK);
    CU_ASSERT_EQUAL(t->workers, 2);
    CU_ASSERT_EQUAL(t->steps_done, 2);
    CU_ASSERT_EQUAL(t->pc.compute.mode, SIM_COMPUTE_TRACE);
    CU_ASSERT(trace_cell_at(t, 2, 1)->compute_s == 0.7);
    CU_ASSERT_EQUAL(t->decisions[1], 0);
    trace_free(t);

    const char *bad[][2] = {
        {"step,worker,compute_s,decision\n1,0,0.5,sync\n", "lacks the column 'sync_s'"},
        {"step,worker,compute_s,sync_s,decision\n1,0,0.5,0.1,maybe\n", "log.csv:2:"},
        {"step,worker,compute_s,sync_s,decision\n1,0,0.5,0.1,1\n1,0,-2,0.1,1\n", "log.csv:3:"},
        {"step,worker,compute_s,sync_s,decision\n1,0,0.5\n", "log.csv:2:"},
        /* found by fuzz_csv: a sample count beyond int */
        {"step,worker,compute_s,sync_s,decision,samples\n1,0,0.5,0.1,1,1e114\n", "log.csv:2:"},
        {"step,worker,compute_s,sync_s,decision\n\n# c\n1,0,abc,0.1,1\n",
         "log.csv:4: compute_s must be a finite number >= 0 (samples: an integer up to 2^30), "
         "not 'abc'"},
        {"step,worker,compute_s,sync_s,decision,step\n", "log.csv:1: column 'step' appears twice"},
        {"step,worker,compute_s,sync_s,decision\r\n1,0,0.5\r\n",
         "log.csv:2: 3 fields, the header has 5"},
        {"# only a comment\n\n", "log.csv: no header (expected a header line"},
        {"step,worker,compute_s,sync_s,decision\n1,0,0.5,0.1,\"sync\n",
         "log.csv:2: unterminated quoted field"},
        {"step,worker,compute_s,sync_s,decision\n1,0,0.5,0.1,s\"ync\n",
         "log.csv:2: a quote inside unquoted field 5"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fp = fmemopen((void *)bad[i][0], strlen(bad[i][0]), "r");
        rc = trace_import_csv_stream(fp, "log.csv", &pc, 4e6, &t);
        fclose(fp);
        CU_ASSERT_EQUAL(rc, SS_EINPUT);
        if (!strstr(ss_error_message(), bad[i][1])) {
            fprintf(stderr, "\n  import: '%s' lacks '%s'\n", ss_error_message(), bad[i][1]);
            CU_FAIL("import message");
        }
    }
}

/* Imports the first len bytes of text as "log.csv"; the trace (NULL on error). */
static int import_text(const char *text, size_t len, trace **t) {
    policy_config pc;
    policy_config_default(&pc);
    pc.coll.algo = SIM_ALLREDUCE_RING; /* written for the ring, the default before auto */
    FILE *fp = fmemopen((void *)text, len, "r");
    int rc = trace_import_csv_stream(fp, "log.csv", &pc, 4e6, t);
    fclose(fp);
    return rc;
}

static void test_import_csv_syntax(void) {
    /* CRLF, comments, blank and indented lines, quoted and padded names, optional and unknown
     * columns: the same trace as the plain log */
    const char *plain = "step,worker,compute_s,sync_s,decision,samples,loss\n"
                        "1,0,0.5,0.2,sync,16,2.0\n1,1,0.6,0.1,sync,16,2.1\n";
    const char *fancy = "# exported, by \"hand\"\r\n\r\n   \r\n"
                        "\"step\", worker ,\"compute_s\",sync_s,decision,\"a, b\",samples,loss\r\n"
                        "  # indented comment\r\n1,0,\"0.5\",0.2,sync,x,16,2.0\r\n"
                        " 1,\t1,0.6 ,0.1,\"sync\",\"y\"\"\",16,2.1";
    trace *a = NULL, *b = NULL;
    CU_ASSERT_EQUAL_FATAL(import_text(plain, strlen(plain), &a), SS_OK);
    if (import_text(fancy, strlen(fancy), &b) != SS_OK) {
        fprintf(stderr, "\n  import: %s\n", ss_error_message());
        CU_FAIL_FATAL("import of the quoted CRLF log");
    }
    CU_ASSERT(a->workers == 2 && b->workers == 2 && a->steps_done == 1 && b->steps_done == 1);
    for (int w = 0; w < 2; w++)
        CU_ASSERT(memcmp(trace_cell_at(a, 1, w), trace_cell_at(b, 1, w), sizeof(trace_cell)) == 0);
    trace_free(a);
    trace_free(b);

    /* a NUL byte, a line over 64 KiB (a comment too): named by line */
    const char nul[] = "step,worker,compute_s,sync_s,decision\n1,0,0.5\0,0.1,1\n";
    CU_ASSERT_EQUAL(import_text(nul, sizeof nul - 1, &a), SS_EINPUT);
    CU_ASSERT_STRING_EQUAL(ss_error_message(), "log.csv:2: line too long or binary");
    size_t big = 70000;
    char *text = ss_malloc(big + 64);
    memset(text, 'x', big);
    memcpy(text, "# ", 2);
    snprintf(text + big, 64, "\nstep,worker\n");
    CU_ASSERT_EQUAL(import_text(text, strlen(text), &a), SS_EINPUT);
    CU_ASSERT_STRING_EQUAL(ss_error_message(), "log.csv:1: line too long or binary");
    free(text);
}

/* ---- replay exactness ---- */

typedef struct emu_case {
    const char *name;
    const char *args; /* train options, space-separated */
    double rel_tol;   /* 0: 1e-9 (exact replay) */
} emu_case;

static int train_child(void *arg, isolate_blob *out) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", (const char *)arg);
    char *argv[64];
    int argc = 0;
    for (char *tok = strtok(buf, " "); tok && argc < 64; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    run_config cfg;
    int rc = options_parse(CMD_TRAIN, argc, argv, &cfg);
    if (rc != SS_OK) return rc;
    /* the emulation's chatter stays out of the test log */
    if (!freopen("/dev/null", "w", stdout)) return ss_error_set(SS_EIO, "freopen");
    run_summary sum;
    rc = run_emulation(&cfg, &sum, NULL);
    if (rc == SS_OK) isolate_blob_append(out, &sum.sim_time_s, sizeof sum.sim_time_s);
    return rc;
}

typedef struct replay_case {
    const char *path;
    int workers;
    replay_scale_out scale_out;
    uint64_t seed;
} replay_case;

static int replay_child(void *arg, isolate_blob *out) {
    const replay_case *rc_ = arg;
    trace *t;
    int rc = trace_load(rc_->path, &t);
    if (rc != SS_OK) return rc;
    replay_opts ro = replay_opts_default();
    ro.workers = rc_->workers;
    ro.scale_out = rc_->scale_out;
    ro.seed = rc_->seed;
    /* the recorded generated platform: bandwidth from the config, latency 5us, as trained */
    const char *bw = trace_config_get(t, "bandwidth");
    if (!bw || platform_parse_bandwidth("bw", bw, &ro.gen.bandwidth_Bps) != SS_OK) return SS_EINPUT;
    ro.gen.latency_s = 5e-6;
    const char *model = trace_config_get(t, "network-model");
    if (model) sim_network_model_parse("model", model, &ro.model);
    replay_result rr;
    rc = replay_run(t, &ro, &rr);
    if (rc == SS_OK) {
        isolate_blob_append(out, &rr.res.sim_time_s, sizeof(double));
        isolate_blob_append(out, &t->sim_time_s, sizeof(double));
    }
    trace_free(t);
    return rc;
}

static double run_double(isolate_fn fn, void *arg, double *second) {
    isolate_blob b = {0};
    int rc = isolate_call(fn, arg, &b);
    if (rc != SS_OK) fprintf(stderr, "\n  child failed: %s\n", ss_error_message());
    CU_ASSERT_EQUAL_FATAL(rc, SS_OK);
    CU_ASSERT_FATAL(b.bytes >= sizeof(double));
    double v;
    memcpy(&v, b.data, sizeof v);
    if (second && b.bytes >= 2 * sizeof(double)) memcpy(second, b.data + sizeof v, sizeof v);
    isolate_blob_free(&b);
    return v;
}

static char out_root[256];

/* Emulates a small run of `policy_args` into out_root/name; returns its simulated time and
 * writes the path of its steps.trace. */
static double emulate(const char *name, const char *policy_args, char *trace_path, size_t n) {
    char args[1024], path[400];
    snprintf(path, sizeof path, "%s/%s", out_root, name);
    snprintf(args, sizeof args,
             "--dataset synthetic --model logreg --workers 4 --epochs 1 --batch 16 "
             "--device cpu --latency 5us --network-model CM02 --progress no --out %s %s",
             path, policy_args);
    double emu_s = run_double(train_child, args, NULL);
    snprintf(trace_path, n, "%s/steps.trace", path);
    return emu_s;
}

static void test_replay_reproduces_emulation(void) {
    static const emu_case cases[] = {
        {"bsp", "--policy bsp", 0},
        {"bsp-ps", "--policy bsp --collective ps --ps-servers 2", 0},
        {"selsync", "--policy selsync --delta 0.02 --ewma-window 4", 0},
        {"selsync-code", "--policy selsync --delta 0.05 --ewma-window 4 --selsync-variant code", 0},
        {"selsync-inject",
         "--policy selsync --delta 0.3 --ewma-window 4 --inject-alpha 0.5 --inject-beta 0.5", 0},
        {"ssp", "--policy ssp --staleness 1", 0},
        {"asp", "--policy asp", 0},
        {"fedavg", "--policy fedavg --client-fraction 0.5 --local-steps 3", 0},
        {"measured", "--policy selsync --delta 0.02 --ewma-window 4 --compute measured:50", 0},
        {"tree-lv08", "--policy bsp --collective tree --network-model LV08 --bandwidth 1Gbps", 0},
        {"dssync", "--policy dssync --group-size 2", 0},
        {"dssync-alternate", "--policy dssync --grouping alternate", 0},
        {"dlcp-layer", "--policy bsp --loss-tolerance 0.2 --chunk-size 4096 --deadline 1us", 0},
        /* magnitude priority orders chunks by their values, which a replay has not: it sends
         * them in index order (FORMAT.md), so only the (unequal) last chunk moves */
        {"dlcp-magnitude",
         "--policy selsync --delta 0.02 --ewma-window 4 --loss-tolerance 0.2 --chunk-size 4096 "
         "--priority magnitude",
         0.02},
        {"stragglers",
         "--policy selsync --delta 0.02 --ewma-window 4 --straggler-prob 0.3 "
         "--straggler-factor 3 --slow-workers 1 --slow-factor 2",
         0},
        {"stragglers-measured",
         "--policy ssp --staleness 1 --straggler-prob 0.3 "
         "--straggler-factor 3 --slow-workers 2 --compute measured:50",
         0},
        {"background", "--policy bsp --background 0.3", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        double emu_s = emulate(cases[i].name, cases[i].args, path, sizeof path);
        replay_case rc = {path, 0, REPLAY_SCALE_ROUND_ROBIN, 1};
        double recorded = -1;
        double rep_s = run_double(replay_child, &rc, &recorded);
        double rel = fabs(rep_s - emu_s) / emu_s;
        fprintf(stderr, "\n  %-15s emulation %.12g s, replay %.12g s, relative difference %.3g",
                cases[i].name, emu_s, rep_s, rel);
        CU_ASSERT(rel <= (cases[i].rel_tol > 0 ? cases[i].rel_tol : 1e-9));
        CU_ASSERT(recorded == emu_s);
    }
}

/* Scale-out: round-robin doubles the workers with the recorded costs; sampling is seeded. The
 * trace is its own (the test runs alone or in any order). */
static void test_replay_scale_out(void) {
    char path[512];
    emulate("scale-out", "--policy selsync --delta 0.02 --ewma-window 4", path, sizeof path);
    replay_case same = {path, 0, REPLAY_SCALE_ROUND_ROBIN, 1};
    replay_case rr = {path, 8, REPLAY_SCALE_ROUND_ROBIN, 1};
    replay_case s1 = {path, 8, REPLAY_SCALE_SAMPLE, 5};
    replay_case s2 = {path, 8, REPLAY_SCALE_SAMPLE, 5};
    double t4 = run_double(replay_child, &same, NULL);
    double t8 = run_double(replay_child, &rr, NULL);
    double a = run_double(replay_child, &s1, NULL);
    double b = run_double(replay_child, &s2, NULL);
    fprintf(stderr, "\n  4 workers %.9g s, 8 round-robin %.9g s, 8 sampled %.9g s", t4, t8, a);
    CU_ASSERT(t8 > t4); /* same steps and decisions, a longer ring */
    CU_ASSERT(a == b);  /* same seed, same run */
}

/* A synthesized BSP run on CM02 against the closed form: S (F/speed + ring all-reduce). `arg`:
 * the text of a profile, or NULL for the shipped alexnet. */
static int profile_child(void *arg, isolate_blob *out) {
    model_profile p;
    int rc;
    if (arg) {
        FILE *fp = fmemopen(arg, strlen(arg), "r");
        SS_ASSERT(fp);
        rc = profile_read(fp, "mem.profile", &p);
        fclose(fp);
    } else {
        rc = profile_find("alexnet", &p);
    }
    if (rc != SS_OK) return rc;
    policy_config pc;
    policy_config_default(&pc);
    pc.coll.algo = SIM_ALLREDUCE_RING; /* written for the ring, the default before auto */
    pc.workers = 8;
    pc.steps = 5;
    pc.batch = 128;
    pc.eval_every = 5;
    pc.overlap = POLICY_OVERLAP_OFF; /* the closed form of one whole-gradient all-reduce */
    trace *t;
    rc = profile_synthesize(&p, &pc, NULL, &t);
    profile_free(&p);
    if (rc != SS_OK) return rc;
    replay_opts ro = replay_opts_default();
    ro.model = SIM_NETWORK_CM02;
    ro.gen.bandwidth_Bps = 10e9 / 8;
    ro.gen.latency_s = 5e-6;
    replay_result rr;
    rc = replay_run(t, &ro, &rr);
    if (rc == SS_OK) {
        double n = 8, m = t->meta.param_bytes, alpha = 2 * 5e-6, bw = 10e9 / 8;
        double expect = 5 * (profile_step_flops(&p, 128) / rr.host_speed_flops +
                             2 * (n - 1) * alpha + 2 * (n - 1) / n * m / bw);
        isolate_blob_append(out, &rr.res.sim_time_s, sizeof(double));
        isolate_blob_append(out, &expect, sizeof(double));
    }
    trace_free(t);
    return rc;
}

static void test_profile_replay_closed_form(void) {
    double expect = 0;
    double got = run_double(profile_child, NULL, &expect);
    fprintf(stderr, "\n  alexnet BSP 8 workers x 5 steps: replay %.9g s, closed form %.9g s", got,
            expect);
    SS_CHECK_CLOSE(got, expect, 0, 1e-3);
}

/* A profile of parameters only (0 FLOPs) times the collective alone: pure communication, 5 ring
 * all-reduces of 4 x 1e6 bytes (CM02 is deterministic). */
static void test_profile_zero_flops(void) {
    char text[] = "syncsim-profile 1\nname comm-only\nlayer w 1000000 0\ntotal 1000000 0\n";
    double expect = 0;
    double got = run_double(profile_child, text, &expect);
    SS_CHECK_CLOSE(got, expect, 0, 1e-9);
    CU_ASSERT(got > 0);
}

/* ---- the command line ---- */

/* Runs `syncsim ARGS` (the built program), output into *out (caller frees); the exit code. */
static int run_syncsim(const char *args, char **out) {
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "%s/syncsim %s 2>&1", SS_BINARY_DIR, args);
    return ss_test_shell(cmd, out);
}

static void expect_cli(const char *args, int code, const char *frag) {
    char *out = NULL;
    int rc = run_syncsim(args, &out);
    int ok = rc == code && (!frag || strstr(out, frag));
    if (!ok)
        fprintf(stderr, "\n  syncsim %s\n  exit %d (expected %d), output:\n%s\n  expected '%s'\n",
                args, rc, code, out, frag ? frag : "");
    CU_ASSERT(ok);
    free(out);
}

/* Thousands of workers: SimGrid's stack guard pages (about 9 memory mappings a worker) passed
 * vm.max_map_count at 4096 workers and the replay aborted; above 1024 it runs without them. */
static void test_cli_replay_many_workers(void) {
#ifdef __SANITIZE_ADDRESS__
    /* that build runs actors as threads, whose stacks and shadow memory take more mappings */
    SS_SKIP("4096 actors under AddressSanitizer");
#endif
    char args[1024];
    snprintf(args, sizeof args,
             "replay --profile resnet101 --policy bsp --workers 4096 --steps 1 --batch 32 "
             "--collective ring-coarse --network-model CM02 --out %s/many",
             out_root);
    expect_cli(args, 0, "1 of 1 steps synchronized");
}

/* train records, replay reproduces it through the options a user gives (the generated platform
 * rebuilt from the recorded config, GPU efficiency included), bad input exits 1 naming the file
 * and line, usage errors exit 2. */
static void test_cli_replay(void) {
    char args[2048], trace_path[512], cut[600];
    snprintf(args, sizeof args,
             "train --dataset synthetic --model logreg --workers 4 --epochs 1 --batch 16 "
             "--device cpu --progress no --policy selsync --delta 0.02 --ewma-window 4 "
             "--gpu-efficiency 0.5 --bandwidth 10Gbps --out %s/cli-train",
             out_root);
    expect_cli(args, 0, "steps.trace");
    snprintf(trace_path, sizeof trace_path, "%s/cli-train/steps.trace", out_root);
    snprintf(args, sizeof args, "replay --trace %s --out %s/cli-replay", trace_path, out_root);
    expect_cli(args, 0, "relative difference 0\n");
    snprintf(args, sizeof args, "trace --trace %s", trace_path);
    expect_cli(args, 0, "policy selsync, 4 workers");
    snprintf(args, sizeof args, "replay --trace %s --workers 64 --scale-out sample --out %s/cli-64",
             trace_path, out_root);
    expect_cli(args, 0, "64 workers (4 recorded, sample)");
    /* a truncated copy */
    snprintf(cut, sizeof cut, "%s/cut.trace", out_root);
    snprintf(args, sizeof args, "head -n 60 '%s' > '%s'", trace_path, cut);
    CU_ASSERT_EQUAL(system(args), 0);
    snprintf(args, sizeof args, "replay --trace %s --out %s/cli-cut", cut, out_root);
    expect_cli(args, 1, "cut.trace:60: truncated");
    expect_cli("replay --trace /nonexistent.trace", 1, "cannot open trace /nonexistent.trace");
    expect_cli("replay", 2, "needs one of --trace FILE, --profile NAME or --import CSV");
    expect_cli("replay --profile nosuchmodel", 2, "no profile 'nosuchmodel'");
    snprintf(args, sizeof args, "replay --trace %s --policy bsp", trace_path);
    expect_cli(args, 2, "records policy selsync");
    snprintf(args, sizeof args,
             "replay --profile resnet101 --policy bsp --workers 16 --batch 32 --gpu v100 "
             "--steps 5 --collective ring-coarse --out %s/cli-profile",
             out_root);
    expect_cli(args, 0, "profile trace of resnet101, bsp, 16 workers");
    /* every GPU class of the table can be generated, not only the first three */
    snprintf(args, sizeof args,
             "replay --profile vgg16 --policy bsp --workers 4 --batch 64 --gpu p100 --steps 2 "
             "--out %s/cli-p100",
             out_root);
    expect_cli(args, 0, "profile trace of vgg16, bsp, 4 workers");
    snprintf(args, sizeof args, "grep -q 'value=\"p100\"' %s/cli-p100/platform.xml", out_root);
    CU_ASSERT_EQUAL(system(args), 0);
    expect_cli("replay --profile vgg16 --gpu x100", 2, "rtx3090|p100");
    /* --comm-jitter given to a replay replaces the recorded one: SSP's lockstep breaks, the
     * clock gaps spread (summary.json has them, as train's), and a policy without a parameter
     * server refuses it */
    double t_s[2];
    for (int j = 0; j < 2; j++) {
        snprintf(args, sizeof args,
                 "replay --profile resnet101 --policy ssp --workers 4 --steps 20 --comm-jitter %s "
                 "--out %s/cli-jitter%d",
                 j ? "0.2" : "0", out_root, j);
        expect_cli(args, 0, "profile trace of resnet101, ssp, 4 workers");
        char path[600];
        snprintf(path, sizeof path, "%s/cli-jitter%d/summary.json", out_root, j);
        run_summary s;
        CU_ASSERT_EQUAL_FATAL(summary_read(path, &s), SS_OK);
        t_s[j] = s.sim_time_s;
        CU_ASSERT(s.clock_gap_bins >= 1);
        if (j) CU_ASSERT(s.max_clock_gap >= 2);
    }
    CU_ASSERT(t_s[1] < 0.9 * t_s[0]); /* staggered pushes overlap the pulls */
    snprintf(args, sizeof args,
             "replay --trace %s/traces/samples/bsp_logreg_4.trace --comm-jitter 0.1",
             SS_SOURCE_DIR);
    expect_cli(args, 2, "--comm-jitter does not apply to policy bsp");
    expect_cli("replay --profile resnet101 --policy selsync --sync-fraction 0.5 --staleness 2 "
               "--steps 2",
               2, "--staleness does not apply to policy selsync");
    snprintf(args, sizeof args,
             "replay --import %s/traces/samples/example_log_8.csv --profile resnet101 --out "
             "%s/cli-import",
             SS_SOURCE_DIR, out_root);
    expect_cli(args, 0, "import trace of resnet101, selsync, 8 workers");
    /* --gpu-efficiency scales a --gpu's peak: with a platform file and no --gpu it is refused,
     * not ignored */
    snprintf(args, sizeof args,
             "replay --trace %s/traces/samples/bsp_logreg_4.trace --platform "
             "%s/platforms/cluster_10gbps_16.xml --gpu-efficiency 0.5 --out %s/cli-eff",
             SS_SOURCE_DIR, SS_SOURCE_DIR, out_root);
    expect_cli(args, 2, "--gpu-efficiency with --platform FILE needs --gpu");
}

/* A recorded trace carries its step's layers ("# layer" lines), so replay --overlap on times
 * the backward pass from it: the recorded step's time split by the layers' FLOPs, which is the
 * emulation's own split under --compute flops, so the replay reproduces the overlapped run
 * exactly. Replayed without --overlap, the trace runs as recorded (auto is off for traces);
 * a trace without layer lines refuses overlap. */
static void test_cli_replay_overlap(void) {
    char args[2048], trace_path[512];
    snprintf(args, sizeof args,
             "train --dataset synthetic --model mlp --workers 4 --epochs 0.5 --batch 16 "
             "--device cpu --progress no --policy bsp --overlap on --bucket-mb 0.1 --compute "
             "flops --compute-jitter 0 --bandwidth 1Gbps --out %s/cli-overlap",
             out_root);
    expect_cli(args, 0, "steps.trace");
    snprintf(trace_path, sizeof trace_path, "%s/cli-overlap/steps.trace", out_root);
    snprintf(args, sizeof args, "grep -c '^# layer ' %s", trace_path);
    char *out = NULL;
    CU_ASSERT_EQUAL(ss_test_shell(args, &out), 0);
    CU_ASSERT_EQUAL(atoi(out), 6); /* 3 dense, 2 ReLU, the loss */
    free(out);
    snprintf(args, sizeof args,
             "replay --trace %s --overlap on --bucket-mb 0.1 --out %s/cli-overlap-replay",
             trace_path, out_root);
    expect_cli(args, 0, "relative difference 0\n");
    snprintf(args, sizeof args, "replay --trace %s --out %s/cli-overlap-off", trace_path, out_root);
    CU_ASSERT_EQUAL(run_syncsim(args, &out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "relative difference -0.1"));
    free(out);
    snprintf(args, sizeof args,
             "replay --trace %s/traces/samples/bsp_logreg_4.trace --overlap on --out "
             "%s/cli-overlap-none",
             SS_SOURCE_DIR, out_root);
    expect_cli(args, 2, "has no per-layer data");
}

/* ---- replay's options as a user reads and gives them ---- */

/* The text of a file (caller frees; NULL if unreadable). */
static char *file_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    int c;
    while ((c = fgetc(f)) != EOF)
        fputc(c, mem);
    fclose(f);
    fclose(mem);
    return buf;
}

/* The line of `text` that starts with `start` (after spaces), into line; 0 if none. */
static int line_starting(const char *text, const char *start, char *line, size_t n) {
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        const char *q = p;
        while (*q == ' ')
            q++;
        if (!strncmp(q, start, strlen(start))) {
            snprintf(line, n, "%.*s", (int)strcspn(q, "\n"), q);
            return 1;
        }
    }
    return 0;
}

/* A profile's replay takes the profile's batch (resnet50: 256), and says so: --help states it,
 * the header prints it, summary.json and config.ini record it (a --config re-run replays the
 * same batch); --batch given wins; a trace replays its recorded batch and refuses --batch. */
static void test_cli_replay_batch(void) {
    char args[2048], path[600], line[512];
    char *out = NULL;
    CU_ASSERT_EQUAL_FATAL(run_syncsim("replay --help", &out), 0);
    CU_ASSERT_FATAL(line_starting(out, "--batch ", line, sizeof line));
    if (strstr(line, "(default 64)") || !strstr(line, "the profile's"))
        fprintf(stderr, "\n  replay --help: %s\n", line);
    CU_ASSERT_PTR_NULL(strstr(line, "(default 64)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "the profile's"));
    free(out);
    const struct {
        const char *given, *dir;
        int batch;
        const char *said;
    } runs[] = {{"", "batch-profile", 256, "batch 256 (the profile's)"},
                {"--batch 32", "batch-given", 32, "batch 32 (given)"}};
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args,
                 "replay --profile resnet50 --workers 2 --steps 2 %s --out %s/%s", runs[i].given,
                 out_root, runs[i].dir);
        expect_cli(args, 0, runs[i].said);
        snprintf(path, sizeof path, "%s/%s/summary.json", out_root, runs[i].dir);
        run_summary s;
        CU_ASSERT_EQUAL_FATAL(summary_read(path, &s), SS_OK);
        CU_ASSERT_EQUAL(s.batch, runs[i].batch);
        snprintf(path, sizeof path, "%s/%s/config.ini", out_root, runs[i].dir);
        char *ini = file_text(path), want[32];
        snprintf(want, sizeof want, "batch = %d\n", runs[i].batch);
        CU_ASSERT_FATAL(ini != NULL);
        const char *at = strstr(ini, want);
        CU_ASSERT_PTR_NOT_NULL(at);
        if (at) CU_ASSERT_PTR_NULL(strstr(at + 1, "batch = ")); /* once */
        free(ini);
    }
    /* the recorded batch re-runs as it ran */
    snprintf(args, sizeof args, "replay --config %s/batch-profile/config.ini --out %s/batch-again",
             out_root, out_root);
    expect_cli(args, 0, "batch 256 (given)");
    run_summary a, b;
    snprintf(path, sizeof path, "%s/batch-profile/summary.json", out_root);
    CU_ASSERT_EQUAL_FATAL(summary_read(path, &a), SS_OK);
    snprintf(path, sizeof path, "%s/batch-again/summary.json", out_root);
    CU_ASSERT_EQUAL_FATAL(summary_read(path, &b), SS_OK);
    CU_ASSERT_EQUAL(a.sim_time_s, b.sim_time_s);
    /* a trace: its recorded batch in the header and the summary; --batch refused */
    snprintf(args, sizeof args,
             "replay --trace %s/traces/samples/bsp_logreg_4.trace --out %s/batch-trace",
             SS_SOURCE_DIR, out_root);
    expect_cli(args, 0, "batch 16 (recorded)");
    snprintf(path, sizeof path, "%s/batch-trace/summary.json", out_root);
    CU_ASSERT_EQUAL_FATAL(summary_read(path, &a), SS_OK);
    CU_ASSERT_EQUAL(a.batch, 16);
    snprintf(args, sizeof args,
             "replay --trace %s/traces/samples/bsp_logreg_4.trace --batch 32 --out %s/batch-no",
             SS_SOURCE_DIR, out_root);
    expect_cli(args, 2, "replays its recorded steps (batch 16)");
}

/* --decisions never starts the recorded sequence again: --steps defaults to the steps it records,
 * and more are refused, naming the file, its step count and the options that fix it; the replay
 * synchronizes exactly the recorded steps. */
static void test_cli_replay_decisions_no_wrap(void) {
    char args[2048], path[600], rec[512];
    snprintf(rec, sizeof rec, "%s/traces/samples/selsync_mlp_4.trace", SS_SOURCE_DIR);
    trace *t = NULL;
    CU_ASSERT_EQUAL_FATAL(trace_load(rec, &t), SS_OK);
    const long n = t->steps_done;
    long synced_all = 0, synced_50 = 0;
    for (long i = 0; i < n; i++) {
        synced_all += t->decisions[i];
        if (i < 50) synced_50 += t->decisions[i];
    }
    trace_free(t);
    CU_ASSERT_FATAL(n > 50);
    char msg[600];
    snprintf(args, sizeof args,
             "replay --profile vgg11 --policy selsync --decisions %s --workers 2 --steps %ld "
             "--out %s/dec-long",
             rec, n + 1, out_root);
    snprintf(msg, sizeof msg, "--decisions %s records %ld complete steps, fewer than --steps %ld",
             rec, n, n + 1);
    expect_cli(args, 2, msg);
    snprintf(msg, sizeof msg, "give --steps %ld or fewer", n);
    expect_cli(args, 2, msg);
    snprintf(path, sizeof path, "%s/dec-long", out_root);
    CU_ASSERT_EQUAL(access(path, F_OK), -1); /* refused before OUT is touched */
    const struct {
        const char *steps, *dir;
        long want_steps, want_synced;
    } runs[] = {{"", "dec-all", n, synced_all}, {"--steps 50", "dec-50", 50, synced_50}};
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args,
                 "replay --profile vgg11 --policy selsync --decisions %s --workers 2 %s --out "
                 "%s/%s",
                 rec, runs[i].steps, out_root, runs[i].dir);
        expect_cli(args, 0, "selsync decisions: the first");
        snprintf(path, sizeof path, "%s/%s/summary.json", out_root, runs[i].dir);
        run_summary s;
        CU_ASSERT_EQUAL_FATAL(summary_read(path, &s), SS_OK);
        CU_ASSERT_EQUAL(s.steps, runs[i].want_steps);
        CU_ASSERT_EQUAL(s.sync_steps, runs[i].want_synced);
    }
}

/* SelSync from a profile has no silent fraction: without --sync-fraction or --decisions it is
 * refused, saying what to give; the fraction given is printed in the header; --sync-fraction
 * with another policy, or with --decisions, is refused rather than ignored. */
static void test_cli_replay_selsync_fraction(void) {
    char args[1024];
    snprintf(args, sizeof args, "replay --profile vgg11 --policy selsync --workers 2 --out %s/sf0",
             out_root);
    expect_cli(args, 2, "needs the steps' decisions: --decisions TRACE");
    expect_cli(args, 2, "--sync-fraction F");
    snprintf(args, sizeof args,
             "replay --profile vgg11 --policy selsync --sync-fraction 0.25 --workers 2 --steps 40 "
             "--out %s/sf25",
             out_root);
    expect_cli(args, 0, "each step synchronizes with probability 0.25");
    char path[600];
    snprintf(path, sizeof path, "%s/sf25/summary.json", out_root);
    run_summary s;
    CU_ASSERT_EQUAL_FATAL(summary_read(path, &s), SS_OK);
    CU_ASSERT(s.sync_steps > 0 && s.sync_steps < 20); /* 10 expected of 40: not every step */
    expect_cli("replay --profile vgg11 --policy bsp --sync-fraction 0.5", 2,
               "are for --profile --policy selsync");
    snprintf(args, sizeof args,
             "replay --profile vgg11 --policy selsync --sync-fraction 0.5 --decisions "
             "%s/traces/samples/selsync_mlp_4.trace",
             SS_SOURCE_DIR);
    expect_cli(args, 2, "exclude each other");
}

/* --progress yes draws replay's progress on stderr (steps done of the total, simulated and wall
 * time), as train's; --progress no draws none. */
static void test_cli_replay_progress(void) {
    char args[1024];
    for (int yes = 0; yes < 2; yes++) {
        snprintf(args, sizeof args,
                 "%s/syncsim replay --profile resnet101 --policy bsp --workers 2 --steps 20 "
                 "--progress %s --out %s/progress%d 2>&1 >/dev/null",
                 SS_BINARY_DIR, yes ? "yes" : "no", out_root, yes);
        char *err = NULL; /* stderr alone */
        CU_ASSERT_EQUAL(ss_test_shell(args, &err), 0);
        const char *last = strstr(err, "step 20/20  sim ");
        if (yes ? !last || !strstr(last, " s  wall ") : strstr(err, "step ") != NULL)
            fprintf(stderr, "\n  --progress %s, stderr:\n%s\n", yes ? "yes" : "no", err);
        if (yes) {
            CU_ASSERT_PTR_NOT_NULL(last);
            CU_ASSERT(last && strstr(last, " s  wall ") != NULL);
        } else {
            CU_ASSERT_PTR_NULL(strstr(err, "step "));
        }
        free(err);
    }
}

/* replay --help lists every profile of traces/profiles with its input and batch, read from the
 * files (a profile added there appears without another edit). */
static void test_cli_replay_help_profiles(void) {
    char *out = NULL;
    CU_ASSERT_EQUAL_FATAL(run_syncsim("replay --help", &out), 0);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/traces/profiles", SS_SOURCE_DIR);
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *e;
    int listed = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= 8 || strcmp(e->d_name + l - 8, ".profile")) continue;
        char path[900], name[256], line[512], want[300];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(name, sizeof name, "%.*s ", (int)(l - 8), e->d_name);
        model_profile p;
        CU_ASSERT_EQUAL_FATAL(profile_load(path, &p), SS_OK);
        snprintf(want, sizeof want, "%s, batch %d: %s", p.input, p.batch, p.description);
        int ok = line_starting(out, name, line, sizeof line) && strstr(line, want);
        if (!ok) fprintf(stderr, "\n  replay --help lacks '%s%s'\n", name, want);
        CU_ASSERT(ok);
        listed += ok;
        profile_free(&p);
    }
    closedir(d);
    CU_ASSERT(listed >= 8);
    free(out);
}

static int suite_init(void) {
    snprintf(out_root, sizeof out_root, "/tmp/ss_test_traces_%d", (int)getpid());
    return ss_mkdir_p(out_root) == SS_OK ? 0 : 1;
}

static int suite_clean(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", out_root);
    return system(cmd) == 0 ? 0 : 1;
}

static CU_TestInfo format_tests[] = {
    {"trace_read(trace_writer_*) round trip, bit for bit", test_trace_round_trip},
    {"a diverged step's nan and inf read back in grad_norm, delta and loss only",
     test_trace_non_finite},
    {"trace_read: truncated, corrupt, duplicate, version mismatch", test_trace_bad_input},
    {"trace_load: the sample traces read in this version", test_trace_samples_load},
    {"profile_find: the four paper models match their published counts",
     test_profiles_published_counts},
    {"profile_read: bad input names the line", test_profile_bad_input},
    {"trace_import_csv_stream: real logs and bad rows", test_import_csv},
    {"trace_import_csv_stream: CRLF, comments, quoted fields, long and binary lines",
     test_import_csv_syntax},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo replay_tests[] = {
    {"replay_run reproduces the emulation's simulated time", test_replay_reproduces_emulation},
    {"profile with 0 FLOPs: a pure-communication run", test_profile_zero_flops},
    {"replay_run scale-out (round-robin, seeded sampling)", test_replay_scale_out},
    {"replay_run of a profile: BSP closed form", test_profile_replay_closed_form},
    {"syncsim replay and trace: exactness, errors, exit codes", test_cli_replay},
    {"syncsim replay --overlap on of a recorded trace: its layer lines, exact",
     test_cli_replay_overlap},
    {"syncsim replay of 4096 workers (no stack guard pages above 1024)",
     test_cli_replay_many_workers},
    {"syncsim replay --profile: the profile's batch in --help, header, summary.json, config.ini",
     test_cli_replay_batch},
    {"syncsim replay --decisions: no silent wrap; --steps defaults to the recorded steps",
     test_cli_replay_decisions_no_wrap},
    {"syncsim replay --profile --policy selsync: --sync-fraction or --decisions required",
     test_cli_replay_selsync_fraction},
    {"syncsim replay --progress yes: steps, simulated and wall time on stderr",
     test_cli_replay_progress},
    {"syncsim replay --help: every shipped profile with its input and batch",
     test_cli_replay_help_profiles},
    CU_TEST_INFO_NULL,
};

int main(void) {
    CU_SuiteInfo suites[] = {
        {"traces format", NULL, NULL, NULL, NULL, format_tests},
        {"traces replay", suite_init, suite_clean, NULL, NULL, replay_tests},
        CU_SUITE_INFO_NULL,
    };
    return ss_test_main(suites);
}

/* syncsim profile import (traces/profile_import.h) and the version-4 profile format: per-layer
 * sums, the mapping of backward functions to their forward layer, the host's gap, GPU kernels,
 * format versions, replay's measured times, and the messages for bad input. The traces are the
 * small files under tests/data/profile_import/ (torch.profiler's Chrome-trace layout, times in
 * microseconds chosen so that every sum is known) or written here. */
#include "ss_test.h"
#include "profile_import_run.h"

#include "cli/commands.h"
#include "common/status.h"
#include "traces/profile.h"
#include "traces/profile_import.h"

#include <unistd.h>

#define DATA SS_SOURCE_DIR "/tests/data/profile_import/"

static int layer_of(const model_profile *p, const char *name) {
    for (int i = 0; i < p->layers; i++)
        if (!strcmp(p->layer_names[i], name)) return i;
    return -1;
}

static int import_ok(const char *trace, const char *params, int batch, model_profile *p) {
    profile_import_opts o = {.trace_path = trace, .params_path = params, .batch = batch};
    char notes[1024];
    int rc = profile_import(&o, p, notes, sizeof notes);
    if (rc != SS_OK) fprintf(stderr, "\n  %s\n", ss_error_message());
    return rc;
}

/* Two steps of 1000 and 1200 us: fc1's top-level operator 100 us, its backward function 120 us
 * and two gradient accumulations 15 + 5 us after it; relu 30 + 40; the model's own add 20 + 10;
 * the loss 40 + 30. The rest (zero_grad, the graph root, the optimizer, another thread's copy)
 * is the host's. */
static void test_cpu_sums(void) {
    model_profile p;
    CU_ASSERT_EQUAL_FATAL(import_ok(DATA "cpu_small.json", DATA "tiny.params.json", 0, &p), SS_OK);
    CU_ASSERT_STRING_EQUAL(p.name, "tiny");
    CU_ASSERT_STRING_EQUAL(p.measured_device, "cpu");
    CU_ASSERT_EQUAL(p.measured_batch, 4);
    CU_ASSERT_EQUAL(p.batch, 4);
    CU_ASSERT_EQUAL(p.measured_steps, 2);
    CU_ASSERT(p.measured);
    SS_CHECK_CLOSE(p.measured_step_s, 1100e-6, 0, 1e-12);
    /* order: as the layers' operators ran; the params file's unused head last */
    CU_ASSERT_EQUAL_FATAL(p.layers, 5);
    const char *order[] = {"fc1", "relu", "model", "loss", "head"};
    for (int i = 0; i < 5; i++)
        CU_ASSERT_STRING_EQUAL(p.layer_names[i], order[i]);
    const double fwd[] = {100, 30, 20, 40, 0}, bwd[] = {140, 40, 10, 30, 0};
    double sum = 0;
    for (int i = 0; i < 5; i++) {
        SS_CHECK_CLOSE(p.layer_costs[i].fwd_s, fwd[i] * 1e-6, 1e-15, 1e-12);
        SS_CHECK_CLOSE(p.layer_costs[i].bwd_s, bwd[i] * 1e-6, 1e-15, 1e-12);
        sum += p.layer_costs[i].fwd_s + p.layer_costs[i].bwd_s;
    }
    SS_CHECK_CLOSE(p.measured_gap_s, (1100 - 410) * 1e-6, 0, 1e-12);
    SS_CHECK_CLOSE(sum + p.measured_gap_s, p.measured_step_s, 0, 1e-12);
    /* parameters and shapes from the params file */
    CU_ASSERT_EQUAL(p.params, 194);
    CU_ASSERT_EQUAL(p.layer_costs[0].param_bytes, 4 * 144);
    CU_ASSERT_EQUAL(p.layer_costs[0].kind, SIM_LAYER_MATMUL);
    CU_ASSERT_EQUAL(p.layer_costs[0].gemm_n, 16);
    CU_ASSERT_EQUAL(p.layer_costs[0].gemm_k, 8);
    CU_ASSERT_EQUAL(p.layer_costs[4].param_bytes, 4 * 50);
    profile_free(&p);
}

/* Without the params file: the parameters from the operators' input shapes (fc1's linear:
 * weight 16x8 and bias 16), the batch from --batch, and the layers with neither time nor
 * parameters (the params file's head) absent. */
static void test_cpu_shapes(void) {
    model_profile p;
    CU_ASSERT_EQUAL_FATAL(import_ok(DATA "cpu_small.json", NULL, 4, &p), SS_OK);
    CU_ASSERT_EQUAL(p.layers, 4);
    CU_ASSERT_EQUAL(p.params, 144);
    const int fc1 = layer_of(&p, "fc1");
    CU_ASSERT_FATAL(fc1 >= 0);
    CU_ASSERT_EQUAL(p.layer_costs[fc1].kind, SIM_LAYER_MATMUL);
    CU_ASSERT_STRING_EQUAL(p.name, "imported");
    profile_free(&p);
}

/* Backward functions go to the layer of the forward operator with their sequence number: relu's
 * (40 us) ran between the model's add's and fc1's; the graph root's and the loss's own go to
 * the host and the loss layer. */
static void test_backward_mapping(void) {
    model_profile p;
    CU_ASSERT_EQUAL_FATAL(import_ok(DATA "cpu_small.json", NULL, 4, &p), SS_OK);
    SS_CHECK_CLOSE(p.layer_costs[layer_of(&p, "relu")].bwd_s, 40e-6, 1e-15, 1e-12);
    SS_CHECK_CLOSE(p.layer_costs[layer_of(&p, "model")].bwd_s, 10e-6, 1e-15, 1e-12);
    /* fc1's two gradient accumulations (no sequence number) follow its backward function */
    SS_CHECK_CLOSE(p.layer_costs[layer_of(&p, "fc1")].bwd_s, 140e-6, 1e-15, 1e-12);
    profile_free(&p);
}

/* Writes `json` to a temporary file; path receives its name. */
static void write_tmp(char *path, const char *json) {
    strcpy(path, "/tmp/ss-profimport-XXXXXX");
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fputs(json, fp);
    fclose(fp);
}

#define EVENT(name, cat, ts, dur, args)                                                            \
    "{\"ph\":\"X\",\"cat\":\"" cat "\",\"name\":\"" name "\",\"pid\":1,\"tid\":1,\"ts\":" #ts      \
    ",\"dur\":" #dur ",\"args\":{" args "}}"

/* A backward function whose sequence number belongs to a forward operator of another layer than
 * the one that ran just before it: mapping by order would give it to b. */
/* A trace of these complete events: {"traceEvents": [e0, e1, ...]} into a temporary file. */
static void write_events(char *path, const char *const *events, int n) {
    char json[4096] = "{\"traceEvents\":[";
    for (int i = 0; i < n; i++) {
        if (i) strcat(json, ",");
        strcat(json, events[i]);
    }
    strcat(json, "]}");
    write_tmp(path, json);
}

static void test_backward_by_sequence(void) {
    char path[64];
    const char *const events[] = {
        EVENT("ProfilerStep#1", "user_annotation", 0, 1000, ""),
        EVENT("syncsim.layer:a", "user_annotation", 10, 100, ""),
        EVENT("aten::mm", "cpu_op", 20, 50, "\"Sequence number\":7"),
        EVENT("syncsim.layer:b", "user_annotation", 200, 100, ""),
        EVENT("aten::mm", "cpu_op", 210, 60, "\"Sequence number\":8"),
        EVENT("autograd::engine::evaluate_function: MmBackward0", "cpu_op", 400, 70,
              "\"Sequence number\":7"),
        EVENT("autograd::engine::evaluate_function: MmBackward0", "cpu_op", 500, 90,
              "\"Sequence number\":8"),
    };
    write_events(path, events, 7);
    char params[64];
    write_tmp(params, "{\"batch\":2,\"layers\":[{\"name\":\"a\",\"params\":10},"
                      "{\"name\":\"b\",\"params\":20}]}");
    model_profile p;
    CU_ASSERT_EQUAL_FATAL(import_ok(path, params, 0, &p), SS_OK);
    SS_CHECK_CLOSE(p.layer_costs[layer_of(&p, "a")].bwd_s, 70e-6, 1e-15, 1e-12);
    SS_CHECK_CLOSE(p.layer_costs[layer_of(&p, "b")].bwd_s, 90e-6, 1e-15, 1e-12);
    SS_CHECK_CLOSE(p.measured_gap_s, (1000 - 50 - 60 - 70 - 90) * 1e-6, 0, 1e-12);
    profile_free(&p);
    unlink(path);
    unlink(params);
}

/* A GPU trace: the layers' times are their kernels', found by External id (the forward one
 * launched by fc1's addmm, the backward one by the mm inside AddmmBackward0); the optimizer's
 * kernel and the CPU operators are the host's. */
static void test_gpu_kernels(void) {
    model_profile p;
    CU_ASSERT_EQUAL_FATAL(import_ok(DATA "gpu_small.json", DATA "tiny.params.json", 0, &p), SS_OK);
    CU_ASSERT_STRING_EQUAL(p.measured_device, "cuda");
    const int fc1 = layer_of(&p, "fc1"), relu = layer_of(&p, "relu");
    CU_ASSERT_FATAL(fc1 >= 0 && relu >= 0);
    SS_CHECK_CLOSE(p.layer_costs[fc1].fwd_s, 60e-6, 1e-15, 1e-12);
    SS_CHECK_CLOSE(p.layer_costs[fc1].bwd_s, 90e-6, 1e-15, 1e-12);
    SS_CHECK_CLOSE(p.layer_costs[relu].fwd_s, 5e-6, 1e-15, 1e-12);
    CU_ASSERT_EQUAL(layer_of(&p, "loss"), -1); /* no kernel, no parameters */
    SS_CHECK_CLOSE(p.measured_gap_s, (1000 - 155) * 1e-6, 0, 1e-12);
    profile_free(&p);
}

/* profile_write, then profile_read: the same profile, bit for bit in its measured seconds. */
static void test_version4_roundtrip(void) {
    model_profile p, q;
    CU_ASSERT_EQUAL_FATAL(import_ok(DATA "cpu_small.json", DATA "tiny.params.json", 0, &p), SS_OK);
    char path[64];
    write_tmp(path, "");
    CU_ASSERT_EQUAL_FATAL(profile_import_write(&p, "a note\nsecond line", path), SS_OK);
    CU_ASSERT_EQUAL_FATAL(profile_load(path, &q), SS_OK);
    CU_ASSERT_EQUAL(q.version, 4);
    CU_ASSERT(q.measured);
    CU_ASSERT_EQUAL(q.layers, p.layers);
    CU_ASSERT_EQUAL(q.params, p.params);
    CU_ASSERT_EQUAL(q.measured_step_s, p.measured_step_s);
    CU_ASSERT_EQUAL(q.measured_gap_s, p.measured_gap_s);
    for (int i = 0; i < p.layers; i++) {
        CU_ASSERT_EQUAL(q.layer_costs[i].fwd_s, p.layer_costs[i].fwd_s);
        CU_ASSERT_EQUAL(q.layer_costs[i].bwd_s, p.layer_costs[i].bwd_s);
        CU_ASSERT_STRING_EQUAL(q.layer_names[i], p.layer_names[i]);
    }
    profile_free(&p);
    profile_free(&q);
    unlink(path);
}

static int read_text(const char *text, model_profile *p) {
    FILE *fp = fmemopen((void *)text, strlen(text), "r");
    int rc = profile_read(fp, "mem.profile", p);
    fclose(fp);
    return rc;
}

/* Versions 1 to 3 are still read (no measured times); a version-4 profile without measured
 * times ('- -') reads as one; a corrupt measured step or a version from the future is refused. */
static void test_versions(void) {
    model_profile p;
    CU_ASSERT_EQUAL_FATAL(profile_find("resnet50", &p), SS_OK); /* a shipped version 3 */
    CU_ASSERT_EQUAL(p.version, 3);
    CU_ASSERT(!p.measured);
    profile_free(&p);
    CU_ASSERT_EQUAL(read_text("syncsim-profile 1\nname a\nlayer l 10 20\ntotal 10 20\n", &p),
                    SS_OK);
    CU_ASSERT(!p.measured && !p.layer_costs);
    profile_free(&p);
    CU_ASSERT_EQUAL(
        read_text("syncsim-profile 2\nname a\nlayer l 10 20 - 1 2 1\ntotal 10 20\n", &p), SS_OK);
    profile_free(&p);
    CU_ASSERT_EQUAL(
        read_text("syncsim-profile 4\nname a\nlayer l 10 20 - 1 2 1 linear 4 5 - -\ntotal 10 20\n",
                  &p),
        SS_OK);
    CU_ASSERT(!p.measured);
    profile_free(&p);
    const char *good = "syncsim-profile 4\nname a\nmeasured_device cpu\nmeasured_batch 8\n"
                       "measured_steps 3\nmeasured_step_s 0.5\nmeasured_gap_s 0.1\n"
                       "layer l 10 0 - 0 0 1 linear 4 5 0.15 0.25\ntotal 10 0\n";
    CU_ASSERT_EQUAL(read_text(good, &p), SS_OK);
    CU_ASSERT(p.measured);
    CU_ASSERT_EQUAL(p.measured_batch, 8);
    profile_free(&p);
    CU_ASSERT_EQUAL(read_text("syncsim-profile 4\nname a\nmeasured_device cpu\nmeasured_batch 8\n"
                              "measured_steps 3\nmeasured_step_s 0.6\nmeasured_gap_s 0.1\n"
                              "layer l 10 0 - 0 0 1 linear 4 5 0.15 0.25\ntotal 10 0\n",
                              &p),
                    SS_EINPUT);
    CU_ASSERT(strstr(ss_error_message(), "measured_step_s") != NULL);
    CU_ASSERT_EQUAL(read_text("syncsim-profile 4\nname a\nlayer l 10 0 - 0 0 1 linear 4 5 0.1 -\n"
                              "total 10 0\n",
                              &p),
                    SS_EINPUT);
    CU_ASSERT(strstr(ss_error_message(), "mem.profile:3:") != NULL);
    CU_ASSERT_EQUAL(read_text("syncsim-profile 5\nname a\n", &p), SS_EINPUT);
    CU_ASSERT(strstr(ss_error_message(), "upgrade syncsim") != NULL);
    /* a version 3 file cannot carry measured keys */
    CU_ASSERT_EQUAL(read_text("syncsim-profile 3\nname a\nmeasured_step_s 1\n"
                              "layer l 10 0 - 0 0 1 linear 4 5\ntotal 10 0\n",
                              &p),
                    SS_EINPUT);
}

/* replay's step source: every step costs the measured step (times batch / measured_batch and
 * the scale), its layers the measured seconds after the host's gap. */
static void test_synthesize_measured(void) {
    model_profile p;
    CU_ASSERT_EQUAL_FATAL(import_ok(DATA "cpu_small.json", DATA "tiny.params.json", 0, &p), SS_OK);
    policy_config pc;
    policy_config_default(&pc);
    pc.workers = 1;
    pc.steps = 3;
    pc.batch = 8; /* twice the measured batch */
    CU_ASSERT_EQUAL_FATAL(sim_compute_parse("--compute", "measured:1.5", &pc.compute), SS_OK);
    trace *t;
    CU_ASSERT_EQUAL_FATAL(profile_synthesize(&p, &pc, NULL, &t), SS_OK);
    CU_ASSERT_EQUAL(t->pc.compute.mode, SIM_COMPUTE_TRACE);
    const double step = 1.5 * 2 * p.measured_step_s;
    for (long s = 1; s <= 3; s++)
        SS_CHECK_CLOSE(trace_cell_at(t, s, 0)->compute_s, step, 0, 1e-12);
    CU_ASSERT_EQUAL_FATAL(t->n_layers, p.layers + 1);
    SS_CHECK_CLOSE(t->layers[0].fwd_s, 3 * p.measured_gap_s, 0, 1e-12);
    CU_ASSERT_EQUAL(t->layers[0].param_bytes, 0);
    double sum = 0;
    for (int i = 0; i < t->n_layers; i++)
        sum += t->layers[i].fwd_s + t->layers[i].bwd_s;
    SS_CHECK_CLOSE(sum, step, 0, 1e-12);
    /* the overlap splits a step by these seconds, not by FLOPs (there are none) */
    double fwd[8], bwd[8], opt;
    sim_compute_host h = {.speed_flops = 1e12};
    CU_ASSERT_EQUAL(sim_compute_layers(&t->pc.compute, &h, t->layers, t->n_layers, fwd, bwd, &opt),
                    SS_OK);
    SS_CHECK_CLOSE(bwd[1], 3 * 140e-6, 0, 1e-12);
    trace_free(t);
    /* model and flops modes need FLOPs, which this trace did not give */
    CU_ASSERT_EQUAL_FATAL(sim_compute_parse("--compute", "flops", &pc.compute), SS_OK);
    CU_ASSERT_EQUAL(profile_synthesize(&p, &pc, NULL, &t), SS_EUSAGE);
    profile_free(&p);
    /* measured on a profile without measured times */
    CU_ASSERT_EQUAL_FATAL(profile_find("resnet50", &p), SS_OK);
    CU_ASSERT_EQUAL_FATAL(sim_compute_parse("--compute", "measured", &pc.compute), SS_OK);
    CU_ASSERT_EQUAL(profile_synthesize(&p, &pc, NULL, &t), SS_EUSAGE);
    CU_ASSERT(strstr(ss_error_message(), "no measured times") != NULL);
    profile_free(&p);
}

/* Bad input: one message naming the file (and the line or event), exit 1 (2 for usage), and no
 * output file. */
static void test_bad_input(void) {
    const char *out = "/tmp/ss-profimport-never.profile";
    unlink(out);
    char path[64];
    const char *step1 = EVENT("ProfilerStep#1", "user_annotation", 0, 100, "");
    const char *step2 = EVENT("ProfilerStep#2", "user_annotation", 200, 100, "");
    const char *layer = EVENT("syncsim.layer:a", "user_annotation", 10, 50, "");
    const char *no_dur = "{\"ph\":\"X\",\"name\":\"x\",\"ts\":1}";
    const char *const no_steps[] = {layer}, *const no_layers[] = {step1},
                      *const bad_event[] = {step1, no_dur},
                      *const idle_step[] = {step1, step2, layer};
    struct {
        const char *json;
        const char *const *events;
        int n;
        const char *want;
    } cases[] = {
        {"{\"traceEvents\": [\n{\"ph\": \"X\",\n \"name\": oops}]}", NULL, 0, ":3: not valid JSON"},
        {"{\"schemaVersion\": 1}", NULL, 0, "no \"traceEvents\" array"},
        {"[1, 2]", NULL, 0, "no \"traceEvents\" array"},
        {NULL, no_steps, 1, "the trace has no steps"},
        {NULL, no_layers, 1, "no 'syncsim.layer:NAME' range"},
        {NULL, bad_event, 2, "traceEvents[1]: a complete event"},
        {NULL, idle_step, 3, "traceEvents[1]: step range 'ProfilerStep#2' holds no layer range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].json)
            write_tmp(path, cases[i].json);
        else
            write_events(path, cases[i].events, cases[i].n);
        int code = run_import(path, "--batch 2", out);
        CU_ASSERT_EQUAL(code, 1);
        const char *msg = ss_error_message();
        if (!strstr(msg, cases[i].want) || !strstr(msg, path))
            fprintf(stderr, "\n  case %zu: '%s', wanted '%s'\n", i, msg, cases[i].want);
        CU_ASSERT(strstr(msg, cases[i].want) != NULL);
        CU_ASSERT(strstr(msg, path) != NULL);
        CU_ASSERT(access(out, F_OK) != 0);
        unlink(path);
    }
    /* a directory, a missing file */
    CU_ASSERT_EQUAL(run_import("/tmp", "--batch 2", out), 1);
    CU_ASSERT(strstr(ss_error_message(), "not a regular file") != NULL);
    CU_ASSERT_EQUAL(run_import("/nonexistent/t.json", "--batch 2", out), 1);
    CU_ASSERT(strstr(ss_error_message(), "/nonexistent/t.json") != NULL);
    /* no batch: a usage error; a bad params file names it */
    CU_ASSERT_EQUAL(run_import(DATA "cpu_small.json", "", out), 2);
    write_tmp(path, "{\"batch\": 4, \"layers\": [{\"name\": \"a b\"}]}");
    char extra[128];
    snprintf(extra, sizeof extra, "--params %s", path);
    CU_ASSERT_EQUAL(run_import(DATA "cpu_small.json", extra, out), 1);
    CU_ASSERT(strstr(ss_error_message(), "layers[0]") != NULL);
    CU_ASSERT(strstr(ss_error_message(), path) != NULL);
    unlink(path);
    CU_ASSERT(access(out, F_OK) != 0);
    /* an unwritable output: nothing left behind */
    CU_ASSERT_EQUAL(run_import(DATA "cpu_small.json", "--batch 4", "/nonexistent/dir/x.profile"),
                    1);
    CU_ASSERT(strstr(ss_error_message(), "/nonexistent/dir/x.profile") != NULL);
    /* and a good one writes the file */
    CU_ASSERT_EQUAL(run_import(DATA "cpu_small.json", "--batch 4", out), 0);
    CU_ASSERT(access(out, F_OK) == 0);
    unlink(out);
}

/* The replay end to end: `syncsim replay --profile` of a shipped imported profile on one worker
 * (its default compute mode, measured) takes steps x the recorded mean step, with the overlap on
 * and off. */
static void test_replay_one_worker(void) {
    const char *prof = SS_SOURCE_DIR "/traces/reference/torch-cpu/cnn.profile";
    model_profile p;
    CU_ASSERT_EQUAL_FATAL(profile_load(prof, &p), SS_OK);
    const double step = p.measured_step_s;
    profile_free(&p);
    char dir[] = "/tmp/ss-profimport-replay-XXXXXX";
    CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
    const char *overlap[] = {"on", "off"};
    for (int k = 0; k < 2; k++) {
        char cmd[1024], *out = NULL;
        snprintf(cmd, sizeof cmd,
                 "%s/syncsim replay --profile %s --workers 1 --steps 5 --overlap %s --out %s 2>&1",
                 SS_BINARY_DIR, prof, overlap[k], dir);
        CU_ASSERT_EQUAL(ss_test_shell(cmd, &out), 0);
        const char *at = out ? strstr(out, "simulated time ") : NULL;
        CU_ASSERT_FATAL(at != NULL);
        SS_CHECK_CLOSE(atof(at + 15), 5 * step, 0, 1e-6);
        free(out);
    }
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    CU_ASSERT_EQUAL(system(rm), 0);
}

static CU_TestInfo tests[] = {
    {"cpu trace: per-layer sums and the host's gap", test_cpu_sums},
    {"cpu trace: parameters from input shapes", test_cpu_shapes},
    {"backward mapped to forward layers", test_backward_mapping},
    {"backward by sequence number, not order", test_backward_by_sequence},
    {"gpu trace: kernels by External id", test_gpu_kernels},
    {"version 4 written and read back", test_version4_roundtrip},
    {"profile versions 1-4 and corrupt measured profiles", test_versions},
    {"replay source: measured step and layers", test_synthesize_measured},
    {"bad input: messages, exit codes, nothing written", test_bad_input},
    {"replay of an imported profile on one worker", test_replay_one_worker},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"profile_import", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}

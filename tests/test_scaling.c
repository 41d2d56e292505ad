/* Replay of profiles through the per-layer compute model, and validate scaling: the model's
 * closed form for one GPU, flops mode unchanged, a 1-GPU reference row at efficiency 1 exactly,
 * bad rows, and the shipped references within their bound, bit for bit from run to run. */
#include "ss_test.h"

#include "common/status.h"
#include "sim/compute/compute.h"
#include "common/isolate.h"
#include "traces/profile.h"
#include "traces/replay.h"
#include "traces/validate_scaling.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct replay_case {
    const trace *t;
    replay_opts ro;
} replay_case;

static int replay_child(void *arg, isolate_blob *out) {
    replay_case *rc = arg;
    replay_result rr;
    int st = replay_run(rc->t, &rc->ro, &rr);
    if (st == SS_OK) {
        isolate_blob_append(out, &rr.res.sim_time_s, sizeof(double));
        isolate_blob_append(out, &rr.host_speed_flops, sizeof(double));
    }
    return st;
}

/* One worker, no exchange to wait for: the simulated time of `steps` steps, and the host speed. */
static int replay_one(const model_profile *p, sim_compute_cfg compute, const gpu_class *g,
                      long steps, double out[2]) {
    policy_config pc;
    policy_config_default(&pc);
    pc.workers = 1;
    pc.steps = steps;
    pc.eval_every = steps;
    pc.batch = 64;
    pc.compute = compute;
    pc.overlap = POLICY_OVERLAP_OFF;
    trace *t;
    int st = profile_synthesize(p, &pc, NULL, &t);
    if (st != SS_OK) return st;
    replay_case rc = {t, replay_opts_default()};
    rc.ro.workers = 1;
    rc.ro.compute_gpu = g;
    isolate_blob b = {0};
    st = isolate_call(replay_child, &rc, &b);
    if (st == SS_OK && b.bytes == 2 * sizeof(double)) memcpy(out, b.data, 2 * sizeof(double));
    isolate_blob_free(&b);
    trace_free(t);
    return st;
}

static void test_replay_model_closed_form(void) {
    model_profile p;
    CU_ASSERT_EQUAL_FATAL(profile_find("resnet101-imagenet", &p), SS_OK);
    CU_ASSERT_EQUAL(p.params, 44549160);
    const gpu_class *g;
    CU_ASSERT_EQUAL_FATAL(gpu_table_find("gpu", "p100", &g), SS_OK);
    sim_layer_cost *layers = malloc(sizeof *layers * (size_t)p.layers);
    CU_ASSERT_EQUAL_FATAL(profile_step_layers(&p, 64, layers), SS_OK);
    const double step_s =
        sim_compute_layers_on(g, SIM_PRECISION_FP32, layers, p.layers, NULL, NULL, NULL);
    double r[2] = {0, 0};
    sim_compute_cfg model = {.mode = SIM_COMPUTE_MODEL, .scale = 1.0};
    CU_ASSERT_EQUAL_FATAL(replay_one(&p, model, g, 3, r), SS_OK);
    SS_CHECK_CLOSE(r[0], 3 * step_s, 1e-12, 1e-9);
    /* fp16 on a P100 (no tensor cores): the fp16 peak is twice fp32's, so the step is faster */
    model.precision = SIM_PRECISION_FP16;
    double h[2] = {0, 0};
    CU_ASSERT_EQUAL_FATAL(replay_one(&p, model, g, 3, h), SS_OK);
    CU_ASSERT(h[0] < r[0]);
    /* flops mode: every step's FLOPs at the host's speed, as before */
    sim_compute_cfg flops = {.mode = SIM_COMPUTE_FLOPS, .scale = 1.0};
    double f[2] = {0, 0};
    CU_ASSERT_EQUAL_FATAL(replay_one(&p, flops, NULL, 3, f), SS_OK);
    SS_CHECK_CLOSE(f[0], 3 * profile_step_flops(&p, 64) / f[1], 1e-12, 1e-9);
    free(layers);
    profile_free(&p);
}

static const char *write_csv(const char *body) {
    static char path[256];
    snprintf(path, sizeof path, "/tmp/syncsim_test_scaling_%ld.csv", (long)getpid());
    FILE *fp = fopen(path, "w");
    fprintf(fp,
            "id,model,profile,batch_per_gpu,gpu,precision,gpus,gpus_per_node,intra,fabric,"
            "bandwidth,collective,protocol,single_gpu_images_per_s,published_scaling_efficiency,"
            "source\n%s",
            body);
    fclose(fp);
    return path;
}

static void test_one_gpu_row(void) {
    const char *path =
        write_csv("one,vgg16,vgg16,64,p100,fp32,1,1,pcie3,roce,25Gbps,auto,auto,-,1.0,none\n"
                  "skip,x,-,64,p100,fp32,8,4,pcie3,roce,25Gbps,auto,auto,-,0.9,none\n");
    FILE *out = tmpfile();
    validate_scaling_result r;
    CU_ASSERT_EQUAL(validate_scaling(path, 0.15, out, &r), SS_OK);
    CU_ASSERT_EQUAL(r.rows, 1);
    CU_ASSERT_EQUAL(r.skipped, 1);
    CU_ASSERT_EQUAL(r.median_rel_error, 0.0); /* time(1) / time(1) */
    CU_ASSERT(r.within_bound);
    fclose(out);
    unlink(path);
}

/* A published single-GPU throughput sets the compute time: a slower GPU hides more of the
 * all-reduce (VGG-16 on 8 P100s over 25 Gbit/s at 100 images/s a GPU against the model's
 * faster step), and NCCL's ring under Simple charges its step latencies, which the plain ring
 * does not: both change the predicted efficiency in the direction they must. */
static double one_row(const char *row) {
    const char *path = write_csv(row);
    FILE *out = tmpfile();
    validate_scaling_result r;
    CU_ASSERT_EQUAL_FATAL(validate_scaling(path, 1.0, out, &r), SS_OK);
    fclose(out);
    unlink(path);
    return r.median_rel_error;
}

static void test_row_settings(void) {
    const char *base = "v,vgg16,vgg16,64,p100,fp32,8,4,pcie3,roce,25Gbps,%s,%s,%s,0.5,none\n";
    char row[256];
    snprintf(row, sizeof row, base, "ring-coarse", "auto", "-");
    const double model = one_row(row); /* |efficiency / 0.5 - 1|: efficiency = 0.5 (1 + e) */
    snprintf(row, sizeof row, base, "ring-coarse", "auto", "20");
    const double slow = one_row(row);
    snprintf(row, sizeof row, base, "ring-coarse", "Simple", "-");
    const double simple = one_row(row);
    CU_ASSERT(slow > model);   /* a slower step: higher efficiency, farther above 0.5 */
    CU_ASSERT(simple < model); /* Simple's per-step latency: lower efficiency */
    /* a protocol on a plain algorithm, and a bad throughput, are refused naming the line */
    snprintf(row, sizeof row, base, "hd", "Simple", "-");
    const char *path = write_csv(row);
    FILE *out = tmpfile();
    validate_scaling_result r;
    CU_ASSERT_EQUAL(validate_scaling(path, 0.15, out, &r), SS_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), ":2: protocol Simple does not apply"));
    snprintf(row, sizeof row, base, "ring", "auto", "-3");
    path = write_csv(row);
    CU_ASSERT_EQUAL(validate_scaling(path, 0.15, out, &r), SS_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "single_gpu_images_per_s '-3'"));
    fclose(out);
    unlink(path);
}

static void test_bad_rows(void) {
    const char *bad[] = {"a,m,vgg16,64,k80,fp32,8,4,pcie3,roce,25Gbps,auto,auto,-,0.9,s\n",
                         "a,m,vgg16,64,p100,fp32,6,4,pcie3,roce,25Gbps,auto,auto,-,0.9,s\n",
                         "a,m,vgg16,64,p100,fp32,8,4,pcie9,roce,25Gbps,auto,auto,-,0.9,s\n",
                         "a,m,vgg16,64,p100,fp32,8,4,pcie3,roce,25Gbps,auto,auto,-,1.5,s\n",
                         "a,m,nosuch,64,p100,fp32,8,4,pcie3,roce,25Gbps,auto,auto,-,0.9,s\n",
                         "a,m,vgg16,64,p100,fp32,8,4,pcie3,roce,25Gbps,rung,auto,-,0.9,s\n"};
    const char *what[] = {"available: v100", "multiple", "pcie9", "(0, 1]", "nosuch", "rung"};
    for (int i = 0; i < 6; i++) {
        const char *path = write_csv(bad[i]);
        FILE *out = tmpfile();
        validate_scaling_result r;
        CU_ASSERT_EQUAL(validate_scaling(path, 0.15, out, &r), SS_EINPUT);
        if (!strstr(ss_error_message(), what[i]))
            fprintf(stderr, "\n  row %d: %s\n", i, ss_error_message());
        CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), what[i]));
        fclose(out);
        unlink(path);
    }
}

static void test_shipped_references(void) {
    validate_scaling_result a, b;
    FILE *out = tmpfile();
    CU_ASSERT_EQUAL_FATAL(validate_scaling(NULL, VALIDATE_SCALING_BOUND, out, &a), SS_OK);
    CU_ASSERT_EQUAL_FATAL(validate_scaling(NULL, VALIDATE_SCALING_BOUND, out, &b), SS_OK);
    /* ResNet-101, Inception v3 and VGG-16 at 128 and 512 GPUs, ResNet-50 on 8 A100s: median
     * 4.0 %, VGG-16 falling from 128 to 512 GPUs and the others flat (docs/VALIDATION.md, "validate
     * scaling") */
    CU_ASSERT_EQUAL(a.rows, 8);
    CU_ASSERT_EQUAL(a.skipped, 0);
    CU_ASSERT(a.median_rel_error > 0.03 && a.median_rel_error < 0.06);
    CU_ASSERT(a.within_bound);
    CU_ASSERT(a.shape_ok);
    CU_ASSERT_EQUAL(a.median_rel_error, b.median_rel_error); /* deterministic */
    fclose(out);
}

int main(void) {
    CU_TestInfo tests[] = {
        {"replay model closed form", test_replay_model_closed_form},
        {"a row's collective, protocol and single-GPU throughput", test_row_settings},
        {"one GPU row", test_one_gpu_row},
        {"bad rows", test_bad_rows},
        {"shipped references", test_shipped_references},
        CU_TEST_INFO_NULL};
    CU_SuiteInfo suites[] = {{"scaling", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return ss_test_main(suites);
}

/* The per-layer compute model, the GPU table, jitter, profiles v2/v3 and validate compute. */
#include "ss_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/status.h"
#include "kernels/model.h"
#include "sim/compute/compute.h"
#include "sim/compute/gpu_table.h"
#include "sim/platform/platform_gen.h"
#include "sim/policy/policy_internal.h"
#include "emu/profile_model.h"
#include "traces/profile.h"
#include "traces/validate_compute.h"

static int suite_init(void) {
    return 0;
}
static int suite_clean(void) {
    return 0;
}

/* Closed form: compute-bound, memory-bound and launch-bound layers, and the optimizer. */
static void test_layer_closed_form(void) {
    const gpu_class *g;
    CU_ASSERT_EQUAL(gpu_table_find("--gpu", "V100", &g), SS_OK);
    const double rate = 15.7e12 * 0.9, bw = 900e9 * 0.83, launch = 4e-6;
    sim_layer_cost l[2] = {{.fwd_flops = 1e12, .bwd_flops = 2e12, .kernels = 2},
                           {.fwd_bytes = 1e9, .bwd_bytes = 3e9, .param_bytes = 4e6, .kernels = 1}};
    double f[2], b[2], opt;
    double total = sim_compute_layers_on(g, SIM_PRECISION_FP32, l, 2, f, b, &opt);
    SS_CHECK_CLOSE(f[0], 1e12 / rate + 2 * launch, 0, 1e-12);
    SS_CHECK_CLOSE(b[0], 2e12 / rate + 2 * launch, 0, 1e-12);
    SS_CHECK_CLOSE(f[1], (1e9 + 4e6) / bw + launch, 0, 1e-12);
    SS_CHECK_CLOSE(b[1], (3e9 + 8e6) / bw + launch, 0, 1e-12);
    SS_CHECK_CLOSE(opt, 5 * 4e6 / bw + launch, 0, 1e-12);
    SS_CHECK_CLOSE(total, f[0] + f[1] + b[0] + b[1] + opt, 0, 1e-12);
    /* fp16 halves the activation traffic and runs at the tensor-core rate */
    sim_compute_layers_on(g, SIM_PRECISION_FP16, l, 2, f, b, &opt);
    SS_CHECK_CLOSE(f[0], 1e12 / (125e12 * 0.9) + 2 * launch, 0, 1e-12);
    SS_CHECK_CLOSE(f[1], (0.5e9 + 2e6) / bw + launch, 0, 1e-12);
    /* bf16 on a V100 (unsupported) falls back to fp32 */
    CU_ASSERT_EQUAL(gpu_class_effective_precision(g, SIM_PRECISION_BF16), SIM_PRECISION_FP32);
}

/* A matrix product at 1 / (1 + n0/N + k0/K) of the rate, with the H100's measured overheads
 * scaled by the rate of one multiprocessor; a normalization at the class's own bandwidth. */
static void test_matmul_and_norm(void) {
    const gpu_class *h, *v;
    CU_ASSERT_EQUAL_FATAL(gpu_table_find("--gpu", "h100", &h), SS_OK);
    CU_ASSERT_EQUAL_FATAL(gpu_table_find("--gpu", "v100", &v), SS_OK);
    /* on the H100 the overheads are the fitted ones: tf32 272, 432 */
    SS_CHECK_CLOSE(gpu_class_matmul_efficiency(h, SIM_PRECISION_TF32, 64, 576),
                   1 / (1 + 272.0 / 64 + 432.0 / 576), 0, 1e-12);
    /* a V100 multiprocessor runs fp16 at 125/80 TFLOP/s, an H100 one at 989.4/132 */
    const double s = (125e12 / 80) / (989.4e12 / 132);
    SS_CHECK_CLOSE(gpu_class_matmul_efficiency(v, SIM_PRECISION_FP16, 256, 2304),
                   1 / (1 + 216 * s / 256 + 672 * s / 2304), 0, 1e-12);
    /* tf32 on a V100 is fp32, with fp32's overheads */
    SS_CHECK_CLOSE(gpu_class_matmul_efficiency(v, SIM_PRECISION_TF32, 64, 64),
                   gpu_class_matmul_efficiency(v, SIM_PRECISION_FP32, 64, 64), 0, 0);
    /* larger products reach more of the rate; an unknown shape the whole rate */
    CU_ASSERT(gpu_class_matmul_efficiency(h, SIM_PRECISION_FP16, 512, 4608) >
              gpu_class_matmul_efficiency(h, SIM_PRECISION_FP16, 64, 576));
    CU_ASSERT_EQUAL(gpu_class_matmul_efficiency(h, SIM_PRECISION_FP16, 0, 576), 1.0);
    /* in the model: a compute-bound product at the reduced rate, a memory-bound normalization at
     * the normalization bandwidth (the H100's measured one; the V100's is its streaming one) */
    sim_layer_cost l[2] = {{.fwd_flops = 1e12,
                            .bwd_flops = 2e12,
                            .kernels = 2,
                            .kind = SIM_LAYER_MATMUL,
                            .gemm_n = 128,
                            .gemm_k = 1152},
                           {.fwd_flops = 1e6,
                            .fwd_bytes = 1e9,
                            .bwd_bytes = 3e9,
                            .kernels = 1,
                            .kind = SIM_LAYER_NORM}};
    double f[2], b[2];
    sim_compute_layers_on(h, SIM_PRECISION_TF32, l, 2, f, b, NULL);
    const double rate = gpu_class_achieved_flops(h, SIM_PRECISION_TF32) *
                        gpu_class_matmul_efficiency(h, SIM_PRECISION_TF32, 128, 1152);
    SS_CHECK_CLOSE(f[0], 1e12 / rate + 2 * h->launch_s, 0, 1e-12);
    SS_CHECK_CLOSE(b[0], 2e12 / rate + 2 * h->launch_s, 0, 1e-12);
    SS_CHECK_CLOSE(f[1], 1e9 / (3.35e12 * 3012.0 / 1.52 / 3350.0) + h->launch_s, 0, 1e-12);
    SS_CHECK_CLOSE(gpu_class_norm_bw_Bps(v), gpu_class_achieved_bw_Bps(v), 0, 0);
    /* max pooling: on the GH100s at its measured rates over its fp32 bytes, the same at tf32 and
     * fp32, its own at 16 bits (not half the bytes); elsewhere streaming at the element size */
    const sim_layer_cost pool = {.fwd_flops = 9e6,
                                 .fwd_bytes = 1e9,
                                 .bwd_bytes = 2e9,
                                 .kernels = 1,
                                 .kind = SIM_LAYER_MAXPOOL};
    const gpu_class *h200;
    CU_ASSERT_FATAL(gpu_table_find("--gpu", "h200", &h200) == SS_OK);
    const gpu_class *gh[2] = {h, h200};
    for (int c = 0; c < 2; c++) {
        double pf, pb;
        sim_compute_layers_on(gh[c], SIM_PRECISION_PYTORCH, &pool, 1, &pf, &pb, NULL);
        SS_CHECK_CLOSE(pf, 1e9 / 1.29e12 + h->launch_s, 0, 1e-12);
        SS_CHECK_CLOSE(pb, 2e9 / 0.741e12 + h->launch_s, 0, 1e-12);
        sim_compute_layers_on(gh[c], SIM_PRECISION_FP16, &pool, 1, &pf, &pb, NULL);
        SS_CHECK_CLOSE(pf, 1e9 / 1.20e12 + h->launch_s, 0, 1e-12);
        SS_CHECK_CLOSE(pb, 2e9 / 0.951e12 + h->launch_s, 0, 1e-12);
    }
    double vf, vb;
    sim_compute_layers_on(v, SIM_PRECISION_FP16, &pool, 1, &vf, &vb, NULL);
    SS_CHECK_CLOSE(vf, 0.5e9 / gpu_class_achieved_bw_Bps(v) + v->launch_s, 0, 1e-12);
    SS_CHECK_CLOSE(vb, 1e9 / gpu_class_achieved_bw_Bps(v) + v->launch_s, 0, 1e-12);
}

/* --precision pytorch: a convolution at tf32 where the class has it, a dense product at fp32;
 * on a class without tf32 both at fp32 */
static void test_pytorch_precision(void) {
    const gpu_class *h, *v;
    CU_ASSERT_FATAL(gpu_table_find("--gpu", "h100", &h) == SS_OK);
    CU_ASSERT_FATAL(gpu_table_find("--gpu", "v100", &v) == SS_OK);
    sim_precision p;
    CU_ASSERT_EQUAL(sim_precision_parse("--precision", "pytorch", &p), SS_OK);
    CU_ASSERT_EQUAL(p, SIM_PRECISION_PYTORCH);
    CU_ASSERT_STRING_EQUAL(sim_precision_name(p), "pytorch");
    const sim_layer_cost conv = {.fwd_flops = 1e12,
                                 .bwd_flops = 2e12,
                                 .fwd_bytes = 1e8,
                                 .param_bytes = 4e6,
                                 .kernels = 2,
                                 .kind = SIM_LAYER_CONV,
                                 .gemm_n = 256,
                                 .gemm_k = 2304};
    sim_layer_cost dense = conv;
    dense.kind = SIM_LAYER_MATMUL;
    /* each after an element-wise layer: the input convolution (the first layer) is another rule
     */
    const sim_layer_cost relu = {.fwd_bytes = 1e6, .bwd_bytes = 1e6, .kernels = 1};
    const sim_layer_cost cl[2] = {relu, conv}, dl[2] = {relu, dense};
    const gpu_class *classes[2] = {h, v};
    for (int c = 0; c < 2; c++) {
        const gpu_class *g = classes[c];
        double fp[2], bp[2], ft[2], bt[2], fs[2], bs[2];
        sim_compute_layers_on(g, SIM_PRECISION_PYTORCH, cl, 2, fp, bp, NULL);
        sim_compute_layers_on(g, SIM_PRECISION_TF32, cl, 2, ft, bt, NULL);
        SS_CHECK_CLOSE(fp[1], ft[1], 0, 1e-15);
        SS_CHECK_CLOSE(bp[1], bt[1], 0, 1e-15);
        sim_compute_layers_on(g, SIM_PRECISION_PYTORCH, dl, 2, fp, bp, NULL);
        sim_compute_layers_on(g, SIM_PRECISION_FP32, dl, 2, fs, bs, NULL);
        SS_CHECK_CLOSE(fp[1], fs[1], 0, 1e-15);
        SS_CHECK_CLOSE(bp[1], bs[1], 0, 1e-15);
    }
    /* the H100's tf32 convolution is several times faster than its fp32 dense product */
    double fc[2], fd[2];
    sim_compute_layers_on(h, SIM_PRECISION_PYTORCH, cl, 2, fc, NULL, NULL);
    sim_compute_layers_on(h, SIM_PRECISION_PYTORCH, dl, 2, fd, NULL, NULL);
    CU_ASSERT(fd[1] > 3 * fc[1]);
    CU_ASSERT_EQUAL(sim_precision_element_bytes(SIM_PRECISION_PYTORCH), 4.0);
}

static void test_table_and_parse(void) {
    const gpu_class *g;
    CU_ASSERT_EQUAL(gpu_table_find("--gpu", "k80", &g), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "v100, a100, h100, rtx3090"));
    CU_ASSERT_TRUE(gpu_table_count() >= 4);
    /* the generated platforms read the same table */
    CU_ASSERT_EQUAL(gpu_table_find("--gpu", "h100", &g), SS_OK);
    CU_ASSERT_EQUAL(platform_gpu_peak_flops(PLATFORM_GPU_H100), g->peak_flops[0]);
    CU_ASSERT_EQUAL(platform_gpu_peak_flops(PLATFORM_GPU_V100), 15.7e12);
    sim_compute_cfg c;
    char buf[32];
    CU_ASSERT_EQUAL(sim_compute_parse("--compute", "model:bf16", &c), SS_OK);
    CU_ASSERT_EQUAL(c.mode, SIM_COMPUTE_MODEL);
    sim_compute_format(&c, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "model:bf16");
    CU_ASSERT_EQUAL(sim_compute_parse("--compute", "model:fp8", &c), SS_EUSAGE);
    const sim_compute_host h = {.speed_flops = 15.7e12};
    CU_ASSERT_EQUAL(sim_compute_layers(&c, &h, NULL, 0, NULL, NULL, NULL), SS_EUSAGE);
}

/* Jitter: 1 at cv 0, deterministic per (seed, worker, step), mean 1 and the asked CV. */
static void test_jitter(void) {
    CU_ASSERT_EQUAL(policy_jitter(1, 3, 7, 0), 1.0);
    CU_ASSERT_EQUAL(policy_jitter(1, 3, 7, 0.1), policy_jitter(1, 3, 7, 0.1));
    CU_ASSERT_NOT_EQUAL(policy_jitter(1, 3, 7, 0.1), policy_jitter(1, 4, 7, 0.1));
    CU_ASSERT_NOT_EQUAL(policy_jitter(1, 3, 7, 0.1), policy_jitter(2, 3, 7, 0.1));
    double s = 0, s2 = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        double x = policy_jitter(5, i % 64, i / 64, 0.1);
        s += x;
        s2 += x * x;
    }
    double mean = s / n, sd = sqrt(s2 / n - mean * mean);
    SS_CHECK_CLOSE(mean, 1.0, 0.002, 0);
    SS_CHECK_CLOSE(sd / mean, 0.1, 0.003, 0);
}

/* The emulated models' layers add up to the counted FLOPs. */
static void test_model_layers(void) {
    device *dev = NULL;
    char notice[256];
    CU_ASSERT_EQUAL_FATAL(device_open("cpu", &dev, notice, sizeof notice), SS_OK);
    model_spec spec;
    model_spec_default(&spec, MODEL_ARCH_CNN, 1, 28, 28, 10);
    model *m = NULL;
    CU_ASSERT_EQUAL(model_create(dev, &spec, 1, 8, &m), SS_OK);
    double f = 0, b = 0, p = 0;
    int matmul = 0;
    for (int i = 0; i < model_cost_layer_count(m); i++) {
        model_layer_cost c;
        model_cost_layer_at(m, i, &c);
        f += c.fwd_flops;
        b += c.bwd_flops;
        p += c.param_bytes;
        CU_ASSERT_TRUE(c.fwd_bytes >= 0 && c.kernels >= 0);
        /* the two convolutions and two dense layers: weights N x K, plus N biases */
        if (c.matmul) {
            matmul++;
            SS_CHECK_CLOSE(c.param_bytes, 4 * (c.gemm_n * c.gemm_k + c.gemm_n), 0, 1e-12);
        } else {
            CU_ASSERT_EQUAL(c.param_bytes, 0);
        }
    }
    CU_ASSERT_EQUAL(matmul, 4);
    SS_CHECK_CLOSE(f, model_forward_flops_per_sample(m), 0, 1e-12);
    SS_CHECK_CLOSE(b, model_backward_flops_per_sample(m), 0, 1e-12);
    SS_CHECK_CLOSE(p, model_param_bytes(m), 0, 1e-12);
    model_destroy(m);
    device_close(dev);
}

/* Version 3 profiles carry per-layer data, kinds and matrix shapes; torchvision's published
 * totals; version 2 is still read (no kinds: every layer at the plain rates). */
static void test_profiles(void) {
    static const struct {
        const char *name;
        double params;
    } ref[] = {{"vgg11", 132863336},
               {"alexnet", 61100840},
               {"resnet50", 25557032},
               {"inception3", 23834568}}; /* torchvision's 27161264 less its auxiliary head */
    for (int i = 0; i < 4; i++) {
        model_profile p;
        CU_ASSERT_EQUAL_FATAL(profile_find(ref[i].name, &p), SS_OK);
        CU_ASSERT_EQUAL(p.version, 3);
        CU_ASSERT_EQUAL(p.params, ref[i].params);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p.layer_costs);
        /* every conv and dense layer has its shape: N x K x (positions) = its weights */
        int matmul = 0;
        for (int j = 0; j < p.layers; j++) {
            const sim_layer_cost *l = &p.layer_costs[j];
            if (!sim_layer_is_product(l->kind)) continue;
            matmul++;
            CU_ASSERT(l->gemm_n >= 1 && l->gemm_k >= 1);
            CU_ASSERT(l->param_bytes >= 4 * l->gemm_n * l->gemm_k &&
                      l->param_bytes <= 4 * (l->gemm_n * l->gemm_k + l->gemm_n));
        }
        CU_ASSERT(matmul >= 8);
        profile_free(&p);
    }
    const char *v2 = "syncsim-profile 2\nname x\nlayer a 10 100 - 8 12 1\ntotal 10 100\n";
    FILE *f2 = fmemopen((void *)v2, strlen(v2), "r");
    model_profile q;
    CU_ASSERT_EQUAL(profile_read(f2, "v2", &q), SS_OK);
    fclose(f2);
    CU_ASSERT_EQUAL(q.version, 2);
    CU_ASSERT(q.layer_costs && q.layer_costs[0].kind == SIM_LAYER_OTHER);
    profile_free(&q);
    const char *v1 = "syncsim-profile 1\nname x\nlayer a 10 100\ntotal 10 100\n";
    FILE *fp = fmemopen((void *)v1, strlen(v1), "r");
    model_profile p;
    CU_ASSERT_EQUAL(profile_read(fp, "v1", &p), SS_OK);
    fclose(fp);
    sim_layer_cost l[1];
    CU_ASSERT_EQUAL(profile_step_layers(&p, 4, l), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "no per-layer data"));
}

/* validate compute on a shipped table: its row count, its median in (lo, hi), and whether that
 * is within the documented bound */
static void expect_validate(const char *file, int rows, double lo, double hi, int within) {
    char path[1024];
    snprintf(path, sizeof path, "%s/traces/reference/compute/%s", SS_SOURCE_DIR, file);
    validate_compute_result r;
    FILE *out = fopen("/dev/null", "w");
    CU_ASSERT_EQUAL(validate_compute(path, VALIDATE_COMPUTE_BOUND, out, &r), SS_OK);
    fclose(out);
    CU_ASSERT_EQUAL(r.rows, rows);
    CU_ASSERT_EQUAL(r.within_bound, within);
    if (!(r.median_rel_error > lo && r.median_rel_error < hi)) {
        fprintf(stderr, "\n  %s: median %.4f outside (%g, %g)", file, r.median_rel_error, lo, hi);
        CU_FAIL("validate compute median");
    }
}

/* The signed relative error validate compute prints for one row (a line of h100-measured.csv's
 * columns, on the eager framework), written alone to a file. */
static double validate_measured_row(const char *line) {
    char path[] = "/tmp/syncsim-row-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fprintf(fp, "id,model,gpu,precision,batch,images_per_s,framework,host_sync\n%s\n", line);
    fclose(fp);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    validate_compute_result r = {0};
    CU_ASSERT_EQUAL(validate_compute(path, 1.0, out, &r), SS_OK);
    fclose(out);
    unlink(path);
    /* the row's line: ... reference predicted error% gpu-only% */
    double ref = 0, pred = 0; /* as printed: whole images/s */
    const char *row = strstr(text, "eager");
    CU_ASSERT_PTR_NOT_NULL_FATAL(row);
    CU_ASSERT_EQUAL(sscanf(row, "%*s %lf %lf", &ref, &pred), 2);
    free(text);
    return (pred - ref) / ref;
}

static void test_validate(void) {
    /* with the tile overheads (fitted on the H100 alone, docs/VALIDATION.md, "validate
     * compute") the published median is 12.0 % (11.6 % before eager's per-parameter kernels and
     * the input convolution at fp32 under tf32; 22.8 % without the overheads). VGG-16 and
     * AlexNet on the P100 stay 34 to 41 % too slow (cuDNN's Winograd and FFT convolutions do
     * fewer operations than counted), Inception v3 41 to 54 % too fast (15 rows) */
    expect_validate("throughputs.csv", 15, 0.11, 0.13, 1);
    /* the throughputs measured on an H100, each on the eager framework as bench/torch_gpu.py
     * ran it (fp16 with GradScaler's read-back): median 9.1 % over 21 rows (11.5 % before max
     * pooling's measured rate; VGG-16 fp32 -34 %: Winograd) */
    expect_validate("h100-measured.csv", 21, 0.08, 0.10, 1);
    /* the H200 (the H100's multiprocessors, faster memory), where nothing was fitted: 12.6 % */
    expect_validate("h200-measured.csv", 15, 0.115, 0.135, 1);
    /* layer by layer: 12 models and precisions on the H100, median 10.4 % (13.5 % before max
     * pooling's measured rate); 3 on the H200, 8.2 % */
    expect_validate("h100-layers.csv", 12, 0.095, 0.115, 1);
    expect_validate("h200-layers.csv", 3, 0.07, 0.10, 1);
}

/* AlexNet on the H100 (measured after the fit, nothing set on it): within 25 % in every
 * precision (tf32 was +56 / +38 % on the GPU's time alone, fp16 +34 / +44 % before max
 * pooling's measured rate, docs/VALIDATION.md) */
static void test_validate_alexnet(void) {
    const char *rows[6] = {
        "a,alexnet,h100,fp32,128,10229.3,eager,0", "a,alexnet,h100,tf32,128,16439.5,eager,0",
        "a,alexnet,h100,fp32,512,11700.3,eager,0", "a,alexnet,h100,tf32,512,21080.4,eager,0",
        "a,alexnet,h100,fp16,128,22593.8,eager,1", "a,alexnet,h100,fp16,512,34403.7,eager,1"};
    const double lo[6] = {-0.25, 0.0, -0.25, 0.0, 0.10, 0.10};
    const double hi[6] = {-0.10, 0.15, -0.10, 0.15, 0.25, 0.25};
    for (int i = 0; i < 6; i++) {
        const double e = validate_measured_row(rows[i]);
        if (!(e > lo[i] && e < hi[i])) {
            fprintf(stderr, "\n  %s: error %+.4f outside (%g, %g)", rows[i], e, lo[i], hi[i]);
            CU_FAIL("AlexNet's row");
        }
    }
}

/* One row of resnet50 on an H100 in fp16 at batch 16 with `loop` (the framework and host_sync
 * columns, or "" for a file without them) through validate compute: the relative error it
 * reports against a reference of 1000 images/s. */
static double validate_one_row(const char *loop) {
    char path[] = "/tmp/syncsim-tput-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fprintf(fp, "id,model,gpu,precision,batch,images_per_s%s\nr,resnet50,h100,fp16,16,1000%s\n",
            *loop ? ",framework,host_sync" : "", loop);
    fclose(fp);
    validate_compute_result r = {0};
    FILE *out = fopen("/dev/null", "w");
    int rc = validate_compute(path, 1.0, out, &r);
    fclose(out);
    unlink(path);
    return rc == SS_OK ? r.median_rel_error : -1;
}

/* A row is predicted on the framework its columns name (eager where a file has none), its
 * error that of batch / sim_compute_step_s on that framework; bad values name the line. */
static void test_validate_framework(void) {
    model_profile p;
    const gpu_class *g;
    CU_ASSERT_EQUAL_FATAL(profile_find("resnet50", &p), SS_OK);
    CU_ASSERT_EQUAL_FATAL(gpu_table_find("gpu", "h100", &g), SS_OK);
    sim_layer_cost *l = malloc(sizeof(sim_layer_cost) * (size_t)p.layers);
    CU_ASSERT_EQUAL_FATAL(profile_step_layers(&p, 16, l), SS_OK);
    const sim_compute_host host = {.speed_flops = 1e12, .gpu = g};
    double step[3][2];
    for (int fw = 0; fw < 3; fw++)
        for (int sync = 0; sync < 2; sync++) {
            const sim_compute_cfg cfg = {.mode = SIM_COMPUTE_MODEL,
                                         .scale = 1,
                                         .precision = SIM_PRECISION_FP16,
                                         .gpu = g,
                                         .framework = (sim_framework)fw,
                                         .host_sync = sync};
            CU_ASSERT_EQUAL(sim_compute_step_s(&cfg, &host, l, p.layers, &step[fw][sync]), SS_OK);
        }
    /* ResNet-50 at batch 16 in fp16 is bound by the host: eager is far slower than the GPU */
    CU_ASSERT_TRUE(step[SIM_FRAMEWORK_EAGER][0] > 1.5 * step[SIM_FRAMEWORK_IDEAL][0]);
    CU_ASSERT_TRUE(step[SIM_FRAMEWORK_EAGER][1] > step[SIM_FRAMEWORK_EAGER][0]);
    const struct {
        const char *loop;
        double step_s;
    } cases[] = {{"", step[SIM_FRAMEWORK_EAGER][0]},
                 {",eager,0", step[SIM_FRAMEWORK_EAGER][0]},
                 {",eager,1", step[SIM_FRAMEWORK_EAGER][1]},
                 {",ideal,", step[SIM_FRAMEWORK_IDEAL][0]},
                 {",graphs,0", step[SIM_FRAMEWORK_GRAPHS][0]}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const double want = fabs(16 / cases[i].step_s - 1000) / 1000;
        const double got = validate_one_row(cases[i].loop);
        if (fabs(got - want) > 1e-9 * want) {
            fprintf(stderr, "\n  columns '%s': error %.9g, want %.9g", cases[i].loop, got, want);
            CU_FAIL("validate compute's framework");
        }
    }
    CU_ASSERT_EQUAL(validate_one_row(",jax,0"), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), ":2: framework: unknown framework 'jax'"));
    CU_ASSERT_EQUAL(validate_one_row(",eager,2"), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), ":2: host_sync must be 0 or 1"));
    free(l);
    profile_free(&p);
}

/* Writes a layers file of the header and `rows` to path. */
static void write_layers(const char *path, const char *rows) {
    FILE *fp = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fputs("model,gpu,precision,batch,profile_layer,fwd_us,bwd_us\n", fp);
    fputs(rows, fp);
    fclose(fp);
}

/* validate compute refuses a layers file of `rows` with a message that holds `needle`. */
static void expect_layers_error(const char *path, const char *rows, const char *needle) {
    write_layers(path, rows);
    validate_compute_result r;
    FILE *out = fopen("/dev/null", "w");
    CU_ASSERT_EQUAL(validate_compute(path, 1.0, out, &r), SS_EINPUT);
    fclose(out);
    if (!strstr(ss_error_message(), needle)) {
        fprintf(stderr, "\n  '%s' lacks '%s'", ss_error_message(), needle);
        CU_FAIL("validate compute message");
    }
}

/* A layers file sums its rows per profile layer: a closed form on two layers of a made-up
 * measurement; a layer the profile lacks and a bad number name the file and line. */
static void test_validate_layers(void) {
    char path[] = "/tmp/syncsim-layers-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    /* resnet50's conv1 measured as 1000 + 2000 us, its maxpool 100 + 0 us, and a dropout */
    write_layers(path, "resnet50,h100,fp32,64,conv1,600,2000\nresnet50,h100,fp32,64,conv1,400,\n"
                       "resnet50,h100,fp32,64,maxpool,100,0\nresnet50,h100,fp32,64,,50,50\n");
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    validate_compute_result r;
    CU_ASSERT_EQUAL(validate_compute(path, 1.0, out, &r), SS_OK);
    fclose(out);
    CU_ASSERT_EQUAL(r.rows, 1);
    /* the model's time of those two layers at batch 64 */
    model_profile p;
    const gpu_class *g;
    CU_ASSERT_EQUAL_FATAL(profile_find("resnet50", &p), SS_OK);
    CU_ASSERT_EQUAL_FATAL(gpu_table_find("gpu", "h100", &g), SS_OK);
    sim_layer_cost *l = malloc(sizeof(sim_layer_cost) * (size_t)p.layers);
    double *f = malloc(sizeof(double) * (size_t)p.layers),
           *b = malloc(sizeof(double) * (size_t)p.layers);
    profile_step_layers(&p, 64, l);
    sim_compute_layers_on(g, SIM_PRECISION_FP32, l, p.layers, f, b, NULL);
    double model = f[0] + b[0] + f[2] + b[2], measured = 3100e-6;
    CU_ASSERT_STRING_EQUAL(p.layer_names[2], "maxpool");
    SS_CHECK_CLOSE(r.median_rel_error, fabs(model - measured) / measured, 0, 1e-9);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "4 layer calls, measured 3.10 ms"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "0.10 ms of layers the profile does not have"));
    free(text);
    free(l);
    free(f);
    free(b);
    profile_free(&p);
    expect_layers_error(path,
                        "resnet50,h100,fp32,64,conv1,600,2000\n"
                        "resnet50,h100,fp32,64,conv99,1,1\n",
                        ":3: profile resnet50 has no layer 'conv99'");
    expect_layers_error(path, "resnet50,h100,fp32,64,conv1,-6,2000\n",
                        ":2: fwd_us and bwd_us must be numbers");
    expect_layers_error(path, "resnet50,k80,fp32,64,conv1,6,2000\n",
                        ":2: gpu: unknown GPU class 'k80'");
    /* rows of dropouts only: nothing of the profile measured */
    expect_layers_error(path, "resnet50,h100,fp32,64,,6,20\n", "batch 64: no time measured");
    unlink(path);
}

/* ---- the framework's host timeline (framework.h) ---- */

/* One layer of each kind, as the tests below use them. */
static void four_layers(sim_layer_cost *l, double dev_s) {
    for (int i = 0; i < 4; i++)
        l[i] = (sim_layer_cost){.kind = (sim_layer_kind)i,
                                .param_bytes = i ? 4096 : 0,
                                .kernels = 1,
                                .fwd_flops = dev_s,
                                .bwd_flops = dev_s};
}

static void test_framework_closed_form(void) {
    sim_layer_cost l[4];
    double f[4], b[4], opt;
    /* ideal: the device's times, unchanged */
    four_layers(l, 0);
    for (int i = 0; i < 4; i++)
        f[i] = 1e-3 * (i + 1), b[i] = 2e-3 * (i + 1);
    opt = 5e-4;
    SS_CHECK_CLOSE(sim_framework_step(SIM_FRAMEWORK_IDEAL, 1, 4e-6, l, 4, f, b, &opt), 30e-3 + 5e-4,
                   0, 1e-12);
    SS_CHECK_CLOSE(f[2], 3e-3, 0, 0);
    /* eager, bound by the host (device times of 1 ns): the host's timeline plus the last
     * kernel; its closed form from the constants of framework.c: zero_grad 75 + 5.18 x 5
     * tensors (dense 2, batch norm 2, convolution 1), passes 48.3 + 156.9, layers (25.9 + 13.8)
     * + (34.3 + 83.7) + (41.6 + 81.0) + (36.4 + 60.9), SGD 261.1 + 3.01 x 5 us */
    for (int i = 0; i < 4; i++)
        f[i] = b[i] = 1e-9;
    opt = 1e-9;
    const double host = (75.0 + 5.18 * 5 + 48.3 + 156.9 + 25.9 + 13.8 + 34.3 + 83.7 + 41.6 + 81.0 +
                         36.4 + 60.9 + 261.1 + 3.01 * 5) *
                        1e-6;
    SS_CHECK_CLOSE(sim_framework_host_s(SIM_FRAMEWORK_EAGER, 0, l, 4), host, 0, 1e-12);
    double total = sim_framework_step(SIM_FRAMEWORK_EAGER, 0, 4e-6, l, 4, f, b, &opt);
    SS_CHECK_CLOSE(total, host + 1e-9 / 5, 0, 1e-9);
    double sum = opt;
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_TRUE(f[i] > 0 && b[i] > 0);
        sum += f[i] + b[i];
    }
    SS_CHECK_CLOSE(sum, total, 0, 1e-12);
    /* the first layer's share holds everything the host did before it */
    SS_CHECK_CLOSE(f[0], (75.0 + 5.18 * 5 + 48.3 + 25.9) * 1e-6 + 1e-9, 0, 1e-9);
    /* a read back of the step (SelSync): one round trip more, 18.3 us */
    for (int i = 0; i < 4; i++)
        f[i] = b[i] = 1e-9;
    opt = 1e-9;
    SS_CHECK_CLOSE(sim_framework_step(SIM_FRAMEWORK_EAGER, 1, 4e-6, l, 4, f, b, &opt) - total,
                   18.3e-6, 0, 1e-9);
    /* eager, bound by the device (1 s a part, one kernel each): the host's lead before the
     * first kernel, then the device's times back to back */
    for (int i = 0; i < 4; i++)
        f[i] = b[i] = 1.0;
    opt = 1.0;
    total = sim_framework_step(SIM_FRAMEWORK_EAGER, 0, 4e-6, l, 4, f, b, &opt);
    SS_CHECK_CLOSE(total, 9.0 + (75.0 + 5.18 * 5 + 48.3 + 25.9) * 1e-6, 0, 1e-12);
    SS_CHECK_CLOSE(b[3], 1.0, 0, 1e-12);
    /* graphs: no host; each kernel's launch (4 us) replaced by a graph's 0.99 us */
    for (int i = 0; i < 4; i++)
        f[i] = b[i] = 1e-3;
    opt = 1e-3;
    total = sim_framework_step(SIM_FRAMEWORK_GRAPHS, 0, 4e-6, l, 4, f, b, &opt);
    SS_CHECK_CLOSE(total, 9e-3 - 9 * 3.01e-6, 0, 1e-12);
    /* parsing */
    sim_framework fw;
    CU_ASSERT_EQUAL(sim_framework_parse("--framework", "graphs", &fw), SS_OK);
    CU_ASSERT_EQUAL(fw, SIM_FRAMEWORK_GRAPHS);
    CU_ASSERT_STRING_EQUAL(sim_framework_name(fw), "graphs");
    CU_ASSERT_EQUAL(sim_framework_parse("--framework", "jax", &fw), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "valid: eager, graphs, ideal"));
}

/* The step's per-parameter kernels and the input convolution (compute.c, [PARAMS], [INPUT]) in
 * closed form on an H100: autocast's casts of a product's weight (1.5 bytes a gradient byte
 * each way) and the scaler's unscale (2) under fp16; eager's zero fill (1, before the first
 * layer), gradient accumulation (3, in each backward) and foreach update (11 instead of the
 * fused 5); the first layer's convolution at fp32 under tf32, a later one at tf32. */
static void test_param_kernels(void) {
    const gpu_class *g;
    CU_ASSERT_EQUAL_FATAL(gpu_table_find("--gpu", "h100", &g), SS_OK);
    const double bw = gpu_class_achieved_bw_Bps(g), L = g->launch_s, P = 4e9;
    /* a memory-bound dense layer of 1 G parameters */
    sim_layer_cost d = {.kind = SIM_LAYER_MATMUL, .param_bytes = P, .kernels = 2};
    double f32, b32, o32, f16, b16, o16;
    sim_compute_layers_on(g, SIM_PRECISION_FP32, &d, 1, &f32, &b32, &o32);
    SS_CHECK_CLOSE(f32, P / bw + 2 * L, 0, 1e-12);
    SS_CHECK_CLOSE(b32, 2 * P / bw + 2 * L, 0, 1e-12);
    SS_CHECK_CLOSE(o32, 5 * P / bw + L, 0, 1e-12);
    sim_compute_layers_on(g, SIM_PRECISION_FP16, &d, 1, &f16, &b16, &o16);
    SS_CHECK_CLOSE(f16, 0.5 * P / bw + 2 * L + 1.5 * P / bw + L, 0, 1e-12);
    SS_CHECK_CLOSE(b16, P / bw + 2 * L + 1.5 * P / bw + L, 0, 1e-12);
    SS_CHECK_CLOSE(o16, 5 * P / bw + L + 2 * P / bw + L, 0, 1e-12);
    /* eager, bound by the device (its first kernel outlasts the host's lead): the device's
     * parts with eager's kernels back to back */
    const sim_compute_cfg eager = {.mode = SIM_COMPUTE_MODEL,
                                   .scale = 1,
                                   .precision = SIM_PRECISION_FP32,
                                   .gpu = g,
                                   .framework = SIM_FRAMEWORK_EAGER};
    const sim_compute_host host = {.speed_flops = 1e12, .gpu = g};
    double f, b, o, step;
    CU_ASSERT_EQUAL(sim_compute_layers(&eager, &host, &d, 1, &f, &b, &o), SS_OK);
    CU_ASSERT_EQUAL(sim_compute_step_s(&eager, &host, &d, 1, &step), SS_OK);
    const double dev = f32 + (P / bw + L) + b32 + (3 * P / bw + L) + o32 + (6 * P / bw + 3 * L);
    SS_CHECK_CLOSE(step, dev, 0, 1e-12);
    SS_CHECK_CLOSE(b, b32 + 3 * P / bw + L, 0, 1e-9);
    SS_CHECK_CLOSE(o, o32 + 6 * P / bw + 3 * L, 0, 1e-9);
    /* ideal keeps the fused update and no fill or accumulation */
    const sim_compute_cfg ideal = {.mode = SIM_COMPUTE_MODEL,
                                   .scale = 1,
                                   .precision = SIM_PRECISION_FP32,
                                   .gpu = g,
                                   .framework = SIM_FRAMEWORK_IDEAL};
    CU_ASSERT_EQUAL(sim_compute_step_s(&ideal, &host, &d, 1, &step), SS_OK);
    SS_CHECK_CLOSE(step, f32 + b32 + o32, 0, 1e-12);
    /* two equal convolutions: the first runs at fp32 under tf32 and pytorch, the second at tf32
     */
    sim_layer_cost c[2];
    for (int i = 0; i < 2; i++)
        c[i] = (sim_layer_cost){.kind = SIM_LAYER_CONV,
                                .fwd_flops = 1e12,
                                .bwd_flops = 2e12,
                                .kernels = 1,
                                .gemm_n = 64,
                                .gemm_k = 576};
    double cf[2], cb[2], one_f, one_b;
    sim_compute_layers_on(g, SIM_PRECISION_TF32, c, 2, cf, cb, NULL);
    const double r32 = gpu_class_achieved_flops(g, SIM_PRECISION_FP32) *
                       gpu_class_matmul_efficiency(g, SIM_PRECISION_FP32, 64, 576);
    const double rtf = gpu_class_achieved_flops(g, SIM_PRECISION_TF32) *
                       gpu_class_matmul_efficiency(g, SIM_PRECISION_TF32, 64, 576);
    SS_CHECK_CLOSE(cf[0], 1e12 / r32 + L, 0, 1e-12);
    SS_CHECK_CLOSE(cb[0], 2e12 / r32 + L, 0, 1e-12);
    SS_CHECK_CLOSE(cf[1], 1e12 / rtf + L, 0, 1e-12);
    CU_ASSERT_TRUE(cf[0] > 1.5 * cf[1]);
    sim_compute_layers_on(g, SIM_PRECISION_PYTORCH, c, 1, &one_f, &one_b, NULL);
    SS_CHECK_CLOSE(one_f, cf[0], 0, 1e-12);
    /* fp16 (channels-last under autocast) keeps its tensor-core rate for the first layer */
    sim_compute_layers_on(g, SIM_PRECISION_FP16, c, 2, cf, cb, NULL);
    SS_CHECK_CLOSE(cf[0], cf[1], 0, 1e-12);
}

/* syncsim's own models at batch 64 on an H100, eager, against their whole eager steps measured
 * on H100 machines (bench/torch_host.py, bench/torch_gpu.py; h100-host.csv, h100-syncsim.csv),
 * none of which set a constant: the mlp's 0.83 to 1.25 ms, the cnn's 1.58 to 2.55 ms,
 * ResNet-20's 7.72 to 14.3 ms. The model gives 1.07, 1.30 and 6.51 ms (ideal: 0.10,
 * 0.29, 1.75): within 16 % of the mlp's nearest figures, 18 % of the cnn's, 16 % of
 * ResNet-20's, all below the slower machines' (the host's share varies 25 % between machines of
 * one kind). */
static double eager_step_ms(const char *name, sim_framework fw) {
    model_spec spec;
    CU_ASSERT_EQUAL_FATAL(model_spec_parse(&spec, name, 1, 28, 28, 10), SS_OK);
    /* the model's layers at batch 64 as the emulation gives them to the compute model */
    model_profile prof;
    CU_ASSERT_EQUAL_FATAL(profile_model_from_spec(&spec, 64, &prof), SS_OK);
    const int n = prof.layers;
    sim_layer_cost *l = ss_calloc((size_t)n, sizeof *l);
    CU_ASSERT_EQUAL_FATAL(profile_step_layers(&prof, 64, l), SS_OK);
    const gpu_class *g;
    CU_ASSERT_EQUAL_FATAL(gpu_table_find("--gpu", "h100", &g), SS_OK);
    sim_compute_cfg cc = {.mode = SIM_COMPUTE_MODEL,
                          .scale = 1.0,
                          .precision = SIM_PRECISION_PYTORCH,
                          .gpu = g,
                          .framework = fw};
    sim_compute_host h = {.speed_flops = 1e12, .gpu = g};
    double s = 0;
    CU_ASSERT_EQUAL(sim_compute_step_s(&cc, &h, l, n, &s), SS_OK);
    const sim_step_cost cost = {.layers = l, .n_layers = n};
    SS_CHECK_CLOSE(sim_compute_duration_s(&cc, &cost, &h), s, 0, 1e-12);
    free(l);
    profile_free(&prof);
    return s * 1e3;
}

static void test_framework_models(void) {
    const double mlp = eager_step_ms("mlp", SIM_FRAMEWORK_EAGER);
    const double cnn = eager_step_ms("cnn", SIM_FRAMEWORK_EAGER);
    const double resnet = eager_step_ms("resnet:20", SIM_FRAMEWORK_EAGER);
    printf("\n  eager steps at batch 64 on h100: mlp %.3f ms, cnn %.3f ms, resnet:20 %.3f ms", mlp,
           cnn, resnet);
    CU_ASSERT_TRUE(fabs(mlp / 0.916 - 1) < 0.20);   /* run 4, synced, search off */
    CU_ASSERT_TRUE(fabs(cnn / 1.59 - 1) < 0.20);    /* run 1, pipelined, search on */
    CU_ASSERT_TRUE(fabs(resnet / 7.72 - 1) < 0.20); /* run 1, pipelined, search on */
    /* the device alone is 5 to 10 times too fast there */
    CU_ASSERT_TRUE(eager_step_ms("mlp", SIM_FRAMEWORK_IDEAL) < 0.2 * mlp);
    CU_ASSERT_TRUE(eager_step_ms("resnet:20", SIM_FRAMEWORK_IDEAL) < 0.3 * resnet);
}

static CU_TestInfo compute_tests[] = {
    {"framework: ideal, eager (host-bound, device-bound, a read-back) and graphs in closed "
     "form",
     test_framework_closed_form},
    {"framework: eager steps of the mlp, cnn and ResNet-20 against measured H100 steps",
     test_framework_models},
    {"compute: --precision pytorch runs convolutions at tf32, dense products at fp32",
     test_pytorch_precision},
    {"per-layer model against its closed form", test_layer_closed_form},
    {"matrix products' shape and normalization bandwidth", test_matmul_and_norm},
    {"GPU table, precision and --compute model parsing", test_table_and_parse},
    {"jitter: deterministic, mean 1, CV", test_jitter},
    {"emulated models' layers sum to the counted FLOPs", test_model_layers},
    {"profiles v3 (kinds, shapes), v2 and the reference parameter counts", test_profiles},
    {"validate compute within its bound", test_validate},
    {"validate compute on per-layer measurements", test_validate_layers},
    {"validate compute on each row's framework", test_validate_framework},
    {"validate compute: AlexNet's rows on the H100", test_validate_alexnet},
    {"compute: per-parameter kernels (AMP casts, eager's fill, accumulation, foreach update) "
     "and "
     "the input convolution in closed form",
     test_param_kernels},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"compute model", suite_init, suite_clean, NULL, NULL, compute_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}

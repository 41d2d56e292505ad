/* Tests of kernels/: layer and model gradients against finite differences, FLOP counts, SGD and
 * learning-rate schedules, vector ops, determinism and learning, all on the CPU backend. */
#include "ss_test.h"

#include "common/rng.h"
#include "common/status.h"
#include "kernels/conv_direct.h"
#include "kernels/conv_winograd.h"
#include "kernels/cpu_par.h"
#include "kernels/device.h"
#include "kernels/device_impl.h"
#include "kernels/layers.h"
#include "kernels/model.h"
#include "kernels/optim.h"

#include <string.h>

static device *open_cpu(void) {
    device *dev = NULL;
    char notice[256];
    CU_ASSERT_FATAL(device_open("cpu", &dev, notice, sizeof notice) == SS_OK);
    return dev;
}

static void fill_uniform(rng *r, float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (float)rng_uniform(r);
}

/* ---- layer gradients ----
 * Loss L = sum_i y_i r_i with fixed random r, so dL/dy = r. Each input and parameter entry is
 * perturbed by +-eps and (L+ - L-) / 2 eps, accumulated in double, is compared with the
 * analytic gradient: |num - ana| <= 2e-4 + 2e-3 |ana|. Every layer is linear in each entry
 * (between kinks), so central differences are exact up to the float32 rounding of y: about
 * sqrt(outputs) * 6e-8 ~ 5e-7 in L, divided by 2 eps = 2e-2 gives ~3e-5 absolute. ReLU and max-pool
 * inputs are drawn away from their kinks (|x| >= 0.1, window values spaced >= 0.05 apart) so that
 * no +-eps step crosses one. */

typedef struct grad_case {
    layer l;
    int batch;
    float *x, *y, *r, *dx; /* device = host on the CPU */
} grad_case;

static double layer_loss(device *dev, grad_case *gc) {
    layer_forward(dev, &gc->l, gc->batch, gc->x, gc->y);
    double s = 0.0;
    size_t n = (size_t)gc->batch * layer_out_size(&gc->l);
    for (size_t i = 0; i < n; i++)
        s += (double)gc->y[i] * gc->r[i];
    return s;
}

/* Checks d L / d v[i] for all i against ana[i]; returns the number of mismatches. */
static int check_entries(device *dev, grad_case *gc, float *v, const float *ana, size_t n,
                         const char *what) {
    const float eps = 1e-2f;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        float keep = v[i];
        v[i] = keep + eps;
        double lp = layer_loss(dev, gc);
        v[i] = keep - eps;
        double lm = layer_loss(dev, gc);
        v[i] = keep;
        double num = (lp - lm) / (2.0 * eps);
        if (fabs(num - ana[i]) > 2e-4 + 2e-3 * fabs(ana[i])) {
            if (bad < 3)
                fprintf(stderr, "\n  %s %s[%zu]: numeric %.6g analytic %.6g", gc->l.name, what, i,
                        num, (double)ana[i]);
            bad++;
        }
    }
    return bad;
}

static void run_layer_grad_check(grad_case *gc, int input_kind) {
    device *dev = open_cpu();
    rng r;
    rng_seed(&r, 42, RNG_STREAM_DATA);
    layer *l = &gc->l;
    l->need_dx = 1;
    size_t np = l->weight_count + l->bias_count;
    float *params = device_alloc(dev, np ? np : 1), *grads = device_alloc(dev, np ? np : 1);
    layer_bind(l, params, grads, 0);
    if (np) fill_uniform(&r, params, np, -0.5f, 0.5f);
    float *buffers = device_alloc(dev, l->buffer_count ? l->buffer_count : 1);
    layer_bind_buffers(l, buffers, 0);
    layer_alloc_scratch(dev, l, gc->batch);
    size_t nin = (size_t)gc->batch * layer_in_size(l), nout = (size_t)gc->batch * layer_out_size(l);
    gc->x = device_alloc(dev, nin);
    gc->dx = device_alloc(dev, nin);
    gc->y = device_alloc(dev, nout);
    gc->r = device_alloc(dev, nout);
    fill_uniform(&r, gc->r, nout, -1.0f, 1.0f);
    if (input_kind == 0) {
        fill_uniform(&r, gc->x, nin, -1.0f, 1.0f);
    } else if (input_kind == 1) { /* ReLU: away from 0 */
        for (size_t i = 0; i < nin; i++)
            gc->x[i] = (rng_uniform(&r) < 0.5 ? -1.0f : 1.0f) * (0.1f + (float)rng_uniform(&r));
    } else { /* max-pool: distinct values 0.05 apart, in random order */
        int *perm = ss_malloc(nin * sizeof(int));
        for (size_t i = 0; i < nin; i++)
            perm[i] = (int)i;
        rng_shuffle(&r, perm, nin);
        for (size_t i = 0; i < nin; i++)
            gc->x[i] = 0.05f * (float)perm[i] - 1.0f;
        free(perm);
    }
    layer_forward(dev, l, gc->batch, gc->x, gc->y);
    layer_backward(dev, l, gc->batch, gc->x, gc->y, gc->r, gc->dx);
    float *ana_dx = ss_malloc(nin * sizeof(float)),
          *ana_dp = ss_malloc((np ? np : 1) * sizeof(float));
    memcpy(ana_dx, gc->dx, nin * sizeof(float));
    if (np) memcpy(ana_dp, grads, np * sizeof(float));
    int bad = check_entries(dev, gc, gc->x, ana_dx, nin, "input");
    if (np) bad += check_entries(dev, gc, params, ana_dp, np, "param");
    CU_ASSERT_EQUAL(bad, 0);
    free(ana_dx);
    free(ana_dp);
    layer_free_scratch(dev, l);
    device_free(dev, gc->x);
    device_free(dev, gc->dx);
    device_free(dev, gc->y);
    device_free(dev, gc->r);
    device_free(dev, params);
    device_free(dev, grads);
    device_free(dev, buffers);
    device_close(dev);
}

static void test_grad_dense(void) {
    grad_case gc = {.batch = 3};
    layer_init_dense(&gc.l, "dense", 7, 5);
    run_layer_grad_check(&gc, 0);
}

static void test_grad_conv2d(void) {
    grad_case gc = {.batch = 2};
    layer_init_conv2d(&gc.l, "conv_pad", 6, 5, 2, 3, 3, 1); /* padded, non-square */
    run_layer_grad_check(&gc, 0);
    grad_case gv = {.batch = 2};
    layer_init_conv2d(&gv.l, "conv_valid", 7, 6, 3, 2, 5, 0); /* 5x5, no padding */
    run_layer_grad_check(&gv, 0);
    grad_case g5 = {.batch = 2};
    layer_init_conv2d(&g5.l, "conv_5x5p2", 6, 6, 1, 2, 5, 2); /* the cnn's shape */
    run_layer_grad_check(&g5, 0);
    /* channels in multiples of 16: the direct convolution where the CPU has AVX-512 */
    grad_case gd = {.batch = 2};
    layer_init_conv2d(&gd.l, "conv_direct", 5, 4, 16, 32, 3, 1);
    run_layer_grad_check(&gd, 0);
    CU_ASSERT_EQUAL(gd.l.conv_direct, conv_direct_available());
    grad_case gd5 = {.batch = 2};
    layer_init_conv2d(&gd5.l, "conv_direct_5x5", 4, 5, 16, 16, 5, 2);
    run_layer_grad_check(&gd5, 0);
}

/* Strided and bias-free convolutions (the ResNets' downsampling 3x3 and 1x1 projection), with
 * odd sizes so that the last row/column is or is not reached. */
static void test_grad_conv2d_strided(void) {
    grad_case g3 = {.batch = 2};
    layer_init_conv2d_ex(&g3.l, "conv_s2", 7, 6, 3, 4, 3, 1, 2, 0);
    CU_ASSERT(g3.l.out_h == 4 && g3.l.out_w == 3 && g3.l.bias_count == 0);
    run_layer_grad_check(&g3, 0);
    grad_case g1 = {.batch = 2};
    layer_init_conv2d_ex(&g1.l, "proj_s2", 6, 5, 4, 6, 1, 0, 2, 0);
    CU_ASSERT(g1.l.out_h == 3 && g1.l.out_w == 3);
    run_layer_grad_check(&g1, 0);
    grad_case gb = {.batch = 2};
    layer_init_conv2d_ex(&gb.l, "conv_s3b", 8, 8, 2, 3, 3, 1, 3, 1);
    run_layer_grad_check(&gb, 0);
    /* bias-free on the direct path where the CPU has AVX-512 (stride 1, 16 channels; 1x1 to keep
     * the check of every entry short) */
    grad_case gd = {.batch = 2};
    layer_init_conv2d_ex(&gd.l, "conv_direct_nb", 3, 3, 16, 16, 1, 0, 1, 0);
    run_layer_grad_check(&gd, 0);
    CU_ASSERT_EQUAL(gd.l.conv_direct, conv_direct_available());
}

/* Batch normalization in training mode: the output depends on every input through the batch's
 * mean and variance, so the loss is not linear in an entry; with eps 1e-2 the central
 * difference is still within the tolerance (its error is O(eps^2) of a third derivative of
 * order 1 / rows). */
static void test_grad_batchnorm(void) {
    grad_case gc = {.batch = 3};
    layer_init_batchnorm(&gc.l, "bn", 2, 3, 4);
    run_layer_grad_check(&gc, 0);
    grad_case gd = {.batch = 4};
    layer_init_batchnorm(&gd.l, "bn_dense", 1, 1, 5); /* BatchNorm1d's case: rows = batch */
    run_layer_grad_check(&gd, 0);
}

static void test_grad_avgpool(void) {
    grad_case gc = {.batch = 3};
    layer_init_avgpool(&gc.l, "gap", 3, 2, 5);
    run_layer_grad_check(&gc, 0);
}

static void test_grad_maxpool(void) {
    grad_case gc = {.batch = 2};
    layer_init_maxpool2(&gc.l, "pool", 4, 6, 3);
    run_layer_grad_check(&gc, 2);
    grad_case go = {.batch = 2};
    layer_init_maxpool2(&go.l, "pool_odd", 5, 5, 2); /* last row/column unused */
    run_layer_grad_check(&go, 2);
}

static void test_grad_relu(void) {
    grad_case gc = {.batch = 3};
    layer_init_relu(&gc.l, "relu", 2, 3, 4);
    run_layer_grad_check(&gc, 1);
}

static void test_grad_flatten(void) {
    grad_case gc = {.batch = 2};
    layer_init_flatten(&gc.l, "flatten", 2, 3, 4);
    run_layer_grad_check(&gc, 0);
}

/* Softmax cross-entropy: d(mean loss)/d(logits) against central differences of the loss. */
static void test_grad_softmax_xent(void) {
    device *dev = open_cpu();
    const device_ops *ops = dev->ops;
    enum { B = 4, K = 5 };
    float z[B * K], d[B * K];
    uint8_t y[B] = {0, 3, 4, 1};
    rng r;
    rng_seed(&r, 5, RNG_STREAM_DATA);
    fill_uniform(&r, z, B * K, -3.0f, 3.0f);
    int correct = -1;
    double loss = ops->softmax_xent(dev, B, K, z, y, d, &correct);
    /* reference loss in double */
    double ref = 0.0;
    int ref_correct = 0;
    for (int b = 0; b < B; b++) {
        double mx = -1e30, s = 0.0;
        int arg = 0;
        for (int k = 0; k < K; k++)
            if (z[b * K + k] > mx) mx = z[b * K + k], arg = k;
        for (int k = 0; k < K; k++)
            s += exp(z[b * K + k] - mx);
        ref += log(s) + mx - z[b * K + y[b]];
        ref_correct += arg == y[b];
    }
    SS_CHECK_CLOSE(loss, ref, 1e-9, 1e-9);
    CU_ASSERT_EQUAL(correct, ref_correct);
    const float eps = 1e-2f;
    for (int i = 0; i < B * K; i++) {
        float keep = z[i];
        z[i] = keep + eps;
        double lp = ops->softmax_xent(dev, B, K, z, y, NULL, NULL) / B;
        z[i] = keep - eps;
        double lm = ops->softmax_xent(dev, B, K, z, y, NULL, NULL) / B;
        z[i] = keep;
        /* smooth function: central-difference error is O(eps^2) ~ 1e-4 of the curvature */
        SS_CHECK_CLOSE(d[i], (lp - lm) / (2.0 * eps), 2e-4, 1e-2);
    }
    device_close(dev);
}

/* ---- model gradients ----
 * Gradient of the mean batch loss: 4 entries of every view, eps 1e-3 on float32 parameters.
 * Error budget: the loss is accumulated in double from float32 logits (rounding ~1e-7), which
 * gives ~1e-4 absolute error after dividing by 2 eps; tolerance 5e-4 + 2e-2 |ana|. A +-eps step
 * can still cross a ReLU or max-pool kink inside the network, where the finite difference is
 * not the derivative. Batch normalization in training mode makes that frequent: a step moves every
 * value of a channel (through its mean and variance), so some of them cross 0 before a ReLU or
 * change a max-pool's argmax, and the deeper the network the more curved the loss. An entry that
 * misses at eps 1e-3 is therefore tried again at eps 2.5e-4 (rounding: ~4e-4 absolute), where
 * both effects shrink while a wrong gradient stays wrong; at most one checked entry per model
 * (one more per 50 checked, for the ResNets' and VGGs' many ReLUs) may miss at both. */
/* The loss the gradient is of: batch normalization in training mode (batch statistics) where the
 * model has it (model_forward_backward, whose running-statistics update does not change the
 * training-mode loss), else model_evaluate. */
static double train_mode_loss(model *m, const float *x, const uint8_t *y, int batch) {
    if (model_buffer_count(m)) return model_forward_backward(m, x, y, batch);
    double loss;
    model_evaluate(m, x, y, (size_t)batch, &loss, NULL);
    return loss;
}

static void model_grad_check(const model_spec *spec, int batch) {
    device *dev = open_cpu();
    model *m;
    CU_ASSERT_FATAL(model_create(dev, spec, 11, batch, &m) == SS_OK);
    const size_t d = (size_t)spec->in_c * spec->in_h * spec->in_w, np = model_param_count(m);
    float *x = ss_malloc((size_t)batch * d * sizeof(float));
    uint8_t *y = ss_malloc((size_t)batch);
    rng r;
    rng_seed(&r, 17, RNG_STREAM_DATA);
    fill_uniform(&r, x, (size_t)batch * d, -1.0f, 1.0f);
    for (int i = 0; i < batch; i++)
        y[i] = (uint8_t)rng_below(&r, (uint64_t)spec->classes);
    /* non-zero biases so that their gradients are exercised away from the init */
    float *p = model_params(m);
    for (int v = 0; v < model_view_count(m); v++) {
        const model_view *vw = model_view_at(m, v);
        if (strstr(vw->name, ".bias")) fill_uniform(&r, p + vw->offset, vw->count, -0.1f, 0.1f);
    }
    double loss = model_forward_backward(m, x, y, batch);
    CU_ASSERT(isfinite(loss));
    float *ana = ss_malloc(np * sizeof(float));
    memcpy(ana, model_grads(m), np * sizeof(float));
    static const float eps[2] = {1e-3f, 2.5e-4f};
    /* 4 entries a view; 2 for the models of many views (a ResNet, a VGG), keeping the test short */
    const int per_view = model_view_count(m) > 16 ? 2 : 4;
    int bad = 0, checked = 0;
    for (int v = 0; v < model_view_count(m); v++) {
        const model_view *vw = model_view_at(m, v);
        for (int t = 0; t < per_view; t++) {
            size_t i = vw->offset + (size_t)rng_below(&r, vw->count);
            float keep = p[i];
            double num = 0;
            for (int e = 0; e < 2; e++) {
                p[i] = keep + eps[e];
                double lp = train_mode_loss(m, x, y, batch);
                p[i] = keep - eps[e];
                double lm = train_mode_loss(m, x, y, batch);
                p[i] = keep;
                num = (lp - lm) / (2.0 * eps[e]);
                if (fabs(num - ana[i]) <= 5e-4 + 2e-2 * fabs(ana[i])) break;
            }
            checked++;
            if (fabs(num - ana[i]) > 5e-4 + 2e-2 * fabs(ana[i])) {
                fprintf(stderr, "\n  %s %s[%zu]: numeric %.6g analytic %.6g",
                        model_arch_name(spec->arch), vw->name, i - vw->offset, num, (double)ana[i]);
                bad++;
            }
        }
    }
    CU_ASSERT(checked >= 8);
    CU_ASSERT(bad <= 1 + checked / 50);
    free(ana);
    free(x);
    free(y);
    model_destroy(m);
    device_close(dev);
}

static void test_grad_logreg(void) {
    model_spec s;
    model_spec_default(&s, MODEL_ARCH_LOGREG, 1, 4, 5, 4);
    model_grad_check(&s, 5);
}

static void test_grad_mlp(void) {
    model_spec s;
    CU_ASSERT_FATAL(model_spec_parse(&s, "mlp:6,5", 1, 4, 5, 4) == SS_OK);
    model_grad_check(&s, 5);
}

static void test_grad_cnn(void) {
    model_spec s;
    model_spec_default(&s, MODEL_ARCH_CNN, 2, 8, 8, 3); /* 2 channels: CHW -> HWC reorder */
    s.conv_channels[0] = 3;
    s.conv_channels[1] = 4;
    s.cnn_dense[0] = 8;
    model_grad_check(&s, 3);
    /* 16 channels each: both convolutions direct where the CPU has AVX-512 */
    model_spec_default(&s, MODEL_ARCH_CNN, 1, 8, 8, 3);
    s.conv_channels[0] = s.conv_channels[1] = 16;
    s.cnn_dense[0] = 8;
    model_grad_check(&s, 2);
}

/* Configurable widths: three dense layers after the convs; LeNet-5 (unpadded) on 16x16 */
static void test_grad_cnn_widths(void) {
    model_spec s;
    CU_ASSERT_FATAL(model_spec_parse(&s, "cnn:3,4,6,5", 2, 8, 8, 3) == SS_OK);
    model_grad_check(&s, 3);
    CU_ASSERT_FATAL(model_spec_parse(&s, "cnn:lenet", 1, 16, 16, 3) == SS_OK);
    model_grad_check(&s, 3);
}

/* resnet:8 (one block a stage): strided convs, batch norm, the shortcuts of option A (zero
 * padding) and option B (1x1 projections), global average pooling; 3-channel input. */
static void test_grad_resnet(void) {
    model_spec s;
    CU_ASSERT_FATAL(model_spec_parse(&s, "resnet:8", 3, 6, 6, 3) == SS_OK);
    model_grad_check(&s, 4);
    /* a batch of 8: batch norm over 8 x 2 x 2 rows in the last stage. With fewer rows the
     * loss is so curved in the parameters that eps 1e-3 leaves a few percent of the entries
     * off by O(eps^2) terms (the misses shrink from eps 3e-3 to 3e-4 before rounding takes
     * over), which is truncation, not a wrong gradient. */
    CU_ASSERT_FATAL(model_spec_parse(&s, "resnet:8,proj", 1, 6, 6, 3) == SS_OK);
    model_grad_check(&s, 8);
}

/* vgg:11 at width 4 (4, 8, 16, 32, 32 channels) on 3x8x8 (8 -> 4 -> 2 -> 1, the last two
 * poolings left out), batch 8 (batch norm over 8 rows in the last stages). The deeper VGGs differ
 * only in how many of the same blocks a stage has (their counts are tested below); their loss is
 * so kinked at these sizes that central differences approach the gradient only below eps 1e-4,
 * where float32 rounding takes over (vgg:16 at width 4 on 3x4x4: an entry with analytic
 * gradient -0.0566 gives -0.154, -0.117, -0.093, -0.070, -0.057 at eps 4e-3, 1e-3, 2.5e-4,
 * 1.25e-4, 6e-5). */
static void test_grad_vgg(void) {
    model_spec s;
    CU_ASSERT_FATAL(model_spec_parse(&s, "vgg:11", 3, 8, 8, 3) == SS_OK);
    s.vgg_width = 4;
    model_grad_check(&s, 8);
}

/* The ReLUs fused into batch norm and add (the CPU's fused ops) against the same models on the
 * CPU without those ops (a copy of its table with them NULL: the layers run apart): the loss,
 * every gradient and the running statistics over three steps (the statistics move), and the
 * evaluation, the same bits; the fused model holds fewer activations. */
/* the CPU's bn_pool_fwd_train, counting its calls (a model that fuses must take it) */
static int bn_pool_calls;
static void (*bn_pool_fwd_train_cpu)(device *, int, int, int, int, const float *, const float *,
                                     const float *, float, float, float *, float *, float *,
                                     float *, float *, uint8_t *);
static void bn_pool_fwd_train_counted(device *dev, int batch, int h, int w, int cols,
                                      const float *x, const float *gamma, const float *beta,
                                      float momentum, float eps, float *run_mean, float *run_var,
                                      float *save_mean, float *save_invstd, float *pool_y,
                                      uint8_t *codes) {
    bn_pool_calls++;
    bn_pool_fwd_train_cpu(dev, batch, h, w, cols, x, gamma, beta, momentum, eps, run_mean, run_var,
                          save_mean, save_invstd, pool_y, codes);
}

static void test_fused_relu_bits(void) {
    /* vgg:11 of width 4 runs its batch norms and max-pools apart (4 and 8 channels), of width 16
     * as blocks (bn_pool_*: 16 to 128 channels): at 14 x 14 the 7 x 7 and 3 x 3 maps leave a row
     * and a column out; at width 48 the third stage's 192 columns are summed in two groups */
    static const struct {
        const char *name;
        int hw, width;
    } models[] = {{"resnet:8", 8, 4},
                  {"resnet:8,proj", 8, 4},
                  {"vgg:11", 8, 4},
                  {"vgg:11", 14, 16},
                  {"vgg:11", 6, 48}};
    device *fused = open_cpu(), *plain = open_cpu();
    CU_ASSERT_FATAL(fused->ops->bn_fwd_train_act && fused->ops->add_fwd);
    CU_ASSERT_FATAL(fused->ops->bn_pool_fwd_train && fused->ops->bn_pool_bwd);
    device_ops ops = *plain->ops;
    ops.bn_fwd_train_act = NULL;
    ops.bn_fwd_infer_act = NULL;
    ops.bn_bwd_masked = NULL;
    ops.add_fwd = NULL;
    ops.bn_pool_fwd_train = NULL;
    ops.bn_pool_fwd_infer = NULL;
    ops.bn_pool_bwd = NULL;
    plain->ops = &ops;
    device_ops counted = *fused->ops;
    bn_pool_fwd_train_cpu = counted.bn_pool_fwd_train;
    counted.bn_pool_fwd_train = bn_pool_fwd_train_counted;
    fused->ops = &counted;
    const int batch = 8, d = 3 * 14 * 14;
    float *x = malloc(sizeof(float) * batch * d);
    uint8_t y[8];
    rng r;
    rng_seed(&r, 12, RNG_STREAM_DATA);
    fill_uniform(&r, x, (size_t)batch * d, -1.0f, 1.0f);
    for (int i = 0; i < batch; i++)
        y[i] = (uint8_t)rng_below(&r, 3);
    for (size_t k = 0; k < sizeof models / sizeof *models; k++) {
        model_spec s;
        const int hw = models[k].hw;
        CU_ASSERT_FATAL(model_spec_parse(&s, models[k].name, 3, hw, hw, 3) == SS_OK);
        s.vgg_width = models[k].width;
        model *a, *b;
        CU_ASSERT_FATAL(model_create(fused, &s, 7, batch, &a) == SS_OK);
        CU_ASSERT_FATAL(model_create(plain, &s, 7, batch, &b) == SS_OK);
        CU_ASSERT(model_device_bytes(a) < model_device_bytes(b));
        bn_pool_calls = 0;
        const size_t np = model_param_count(a), nb = model_buffer_count(a);
        CU_ASSERT_FATAL(np == model_param_count(b) && nb == model_buffer_count(b) && nb > 0);
        for (int step = 0; step < 3; step++) {
            const double la = model_forward_backward(a, x, y, batch);
            const double lb = model_forward_backward(b, x, y, batch);
            CU_ASSERT_EQUAL(la, lb);
            CU_ASSERT(memcmp(model_grads(a), model_grads(b), np * sizeof(float)) == 0);
            CU_ASSERT(memcmp(model_buffers(a), model_buffers(b), nb * sizeof(float)) == 0);
        }
        /* vgg's batch norms of a multiple of 16 channels before a max-pool ran as blocks, once a
         * step: its stages' widths are width << min(stage, 3), a map of 2 x 2 or more pooled */
        int blocks = 0;
        for (int st = 0, h = hw; st < 5 && !strcmp(models[k].name, "vgg:11"); st++)
            if (h >= 2) {
                blocks += (models[k].width << (st < 3 ? st : 3)) % 16 == 0;
                h /= 2;
            }
        CU_ASSERT_EQUAL(bn_pool_calls, 3 * blocks);
        size_t ca = 0, cb = 0;
        CU_ASSERT_EQUAL(model_evaluate_sum(a, x, y, batch, &ca),
                        model_evaluate_sum(b, x, y, batch, &cb));
        CU_ASSERT_EQUAL(ca, cb);
        model_destroy(a);
        model_destroy(b);
    }
    free(x);
    device_close(fused);
    device_close(plain);
}

static double rms(const float *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)v[i] * v[i];
    return sqrt(s / (double)n);
}

/* A conv batch larger than one im2col chunk must give what per-sample passes give. */
static void test_conv_chunks(void) {
    device *dev = open_cpu();
    layer l;
    layer_init_conv2d(&l, "conv", 14, 14, 8, 4, 5, 2); /* 157 KB of columns a sample: 6 a chunk */
    const int chunk = layer_conv_chunk_samples(&l, DEVICE_KIND_CPU);
    CU_ASSERT(chunk > 1);
    const int batch = 2 * chunk + 3; /* two full chunks and a partial one */
    size_t np = l.weight_count + l.bias_count, nin = layer_in_size(&l), nout = layer_out_size(&l);
    float *p = device_alloc(dev, np), *g = device_alloc(dev, np);
    layer_bind(&l, p, g, 0);
    rng r;
    rng_seed(&r, 3, RNG_STREAM_DATA);
    fill_uniform(&r, p, np, -0.5f, 0.5f);
    layer_alloc_scratch(dev, &l, batch);
    float *x = device_alloc(dev, batch * nin), *y = device_alloc(dev, batch * nout);
    float *dy = device_alloc(dev, batch * nout), *dx = device_alloc(dev, batch * nin);
    fill_uniform(&r, x, batch * nin, -1, 1);
    fill_uniform(&r, dy, batch * nout, -1, 1);
    layer_forward(dev, &l, batch, x, y);
    layer_backward(dev, &l, batch, x, y, dy, dx);
    float *gbatch = ss_malloc(np * sizeof(float));
    memcpy(gbatch, g, np * sizeof(float));
    double *gsum = ss_calloc(np, sizeof(double));
    float *y1 = device_alloc(dev, nout), *dx1 = device_alloc(dev, nin);
    /* Each output is a float dot product of 800 terms, summed in an order that depends on the
     * BLAS kernel (AVX-512, AVX2, SSE) and on the matrix shape (one sample or a chunk): the two
     * differ by a few float ulps of the terms' magnitude, which the tensor's RMS stands for.
     * Bound: 1e-5 (|ref| + RMS), about 40x the typical difference; a chunking bug is O(1). */
    const double rms_y = rms(y, (size_t)batch * nout), rms_dx = rms(dx, (size_t)batch * nin);
    double worst = 0.0; /* largest |difference| / bound */
    for (int b = 0; b < batch; b++) {
        layer_forward(dev, &l, 1, x + b * nin, y1);
        layer_backward(dev, &l, 1, x + b * nin, y1, dy + b * nout, dx1);
        for (size_t i = 0; i < nout; i++) {
            double ref = y[b * nout + i];
            worst = fmax(worst, fabs(y1[i] - ref) / (1e-5 * (fabs(ref) + rms_y)));
        }
        for (size_t i = 0; i < nin; i++) {
            double ref = dx[b * nin + i];
            worst = fmax(worst, fabs(dx1[i] - ref) / (1e-5 * (fabs(ref) + rms_dx)));
        }
        for (size_t i = 0; i < np; i++)
            gsum[i] += g[i];
    }
    fprintf(stderr, "\n  conv outputs: largest difference %.3g x the bound", worst);
    CU_ASSERT(worst <= 1);
    /* float sums over batch * 196 terms in two orders: ~1e-6 relative; a chunking bug is O(1) */
    int bad = 0;
    for (size_t i = 0; i < np; i++) {
        if (fabs(gbatch[i] - gsum[i]) <= 1e-4 + 1e-4 * fabs(gsum[i])) continue;
        if (bad++ < 3)
            fprintf(stderr, "\n  conv grad[%zu]: batch %.8g, sum of samples %.8g", i,
                    (double)gbatch[i], gsum[i]);
    }
    CU_ASSERT_EQUAL(bad, 0);
    free(gsum);
    free(gbatch);
    layer_free_scratch(dev, &l);
    device_free(dev, p);
    device_free(dev, g);
    device_free(dev, x);
    device_free(dev, y);
    device_free(dev, dy);
    device_free(dev, dx);
    device_free(dev, y1);
    device_free(dev, dx1);
    device_close(dev);
}

/* ---- FLOP counts against closed forms (rule in layers.h) ---- */

static void test_flops_mlp(void) {
    device *dev = open_cpu();
    model_spec s;
    CU_ASSERT_FATAL(model_spec_parse(&s, "mlp:6,5", 1, 4, 5, 4) == SS_OK);
    model *m;
    CU_ASSERT_FATAL(model_create(dev, &s, 1, 8, &m) == SS_OK);
    /* D = 20 -> 6 -> relu -> 5 -> relu -> 4, K = 4 */
    double fwd = (2 * 20 * 6 + 6) + 6 + (2 * 6 * 5 + 5) + 5 + (2 * 5 * 4 + 4) + 4 * 4;
    double bwd = (2 * 20 * 6 + 6)               /* dense1: no input gradient */
                 + 6 + (2 * 2 * 6 * 5 + 5) + 5  /* relu1, dense2 (dW and dx), relu2 */
                 + (2 * 2 * 5 * 4 + 4) + 2 * 4; /* dense3, loss */
    SS_CHECK_CLOSE(model_forward_flops_per_sample(m), fwd, 0, 0);
    SS_CHECK_CLOSE(model_backward_flops_per_sample(m), bwd, 0, 0);
    CU_ASSERT_EQUAL(model_param_count(m), 20 * 6 + 6 + 6 * 5 + 5 + 5 * 4 + 4);
    SS_CHECK_CLOSE(model_param_bytes(m), 4.0 * model_param_count(m), 0, 0);
    model_destroy(m);
    device_close(dev);
}

static void test_flops_cnn(void) {
    device *dev = open_cpu();
    model_spec s;
    model_spec_default(&s, MODEL_ARCH_CNN, 1, 8, 8, 3);
    s.conv_channels[0] = 3;
    s.conv_channels[1] = 4;
    s.cnn_dense[0] = 8;
    model *m;
    CU_ASSERT_FATAL(model_create(dev, &s, 1, 4, &m) == SS_OK);
    /* conv1 8x8x1 -> 8x8x3 (P 64, KKC 25), pool -> 4x4x3, conv2 -> 4x4x4 (P 16, KKC 75),
     * pool -> 2x2x4 = 16, dense 16 -> 8, relu, dense 8 -> 3 */
    double conv1 = 2.0 * 64 * 25 * 3, conv2 = 2.0 * 16 * 75 * 4;
    double fwd = conv1 + 64 * 3 + 192 + 3 * 48  /* conv1, bias, relu1, pool1 */
                 + conv2 + 16 * 4 + 64 + 3 * 16 /* conv2, bias, relu2, pool2 */
                 + (2 * 16 * 8 + 8) + 8 + (2 * 8 * 3 + 3) + 4 * 3;
    double bwd = conv1 + 64 * 3 + 192 + 3 * 48                /* conv1: dW and db only */
                 + 2 * conv2 + 16 * 4 + 16 * 75 + 64 + 3 * 16 /* conv2 with dcol and col2im */
                 + (2 * 2 * 16 * 8 + 8) + 8 + (2 * 2 * 8 * 3 + 3) + 2 * 3;
    SS_CHECK_CLOSE(model_forward_flops_per_sample(m), fwd, 0, 0);
    SS_CHECK_CLOSE(model_backward_flops_per_sample(m), bwd, 0, 0);
    CU_ASSERT_EQUAL(model_param_count(m), 3 * 25 + 3 + 4 * 75 + 4 + 16 * 8 + 8 + 8 * 3 + 3);
    model_destroy(m);
    device_close(dev);
}

/* ---- models: views, init, specs ---- */

static void test_model_views(void) {
    device *dev = open_cpu();
    model_spec s;
    model_spec_default(&s, MODEL_ARCH_CNN, 1, 28, 28, 10);
    model *m;
    CU_ASSERT_FATAL(model_create(dev, &s, 1, 2, &m) == SS_OK);
    static const char *const names[] = {"conv1.weight",  "conv1.bias",    "conv2.weight",
                                        "conv2.bias",    "dense1.weight", "dense1.bias",
                                        "dense2.weight", "dense2.bias"};
    CU_ASSERT_EQUAL_FATAL(model_view_count(m), 8);
    size_t offset = 0;
    const float *p = model_params(m);
    for (int v = 0; v < 8; v++) {
        const model_view *vw = model_view_at(m, v);
        CU_ASSERT_STRING_EQUAL(vw->name, names[v]);
        CU_ASSERT_EQUAL(vw->offset, offset);
        offset += vw->count;
        int is_bias = strstr(vw->name, ".bias") != NULL;
        /* He-uniform: |w| <= sqrt(6 / fan_in); biases zero */
        size_t fan_in = is_bias ? 1 : vw->count / model_view_at(m, v + 1)->count;
        double bound = sqrt(6.0 / (double)fan_in), max_abs = 0.0;
        for (size_t i = 0; i < vw->count; i++)
            max_abs = fmax(max_abs, fabs(p[vw->offset + i]));
        if (is_bias) CU_ASSERT(max_abs == 0.0);
        if (!is_bias) CU_ASSERT(max_abs <= bound && max_abs > 0.5 * bound);
    }
    CU_ASSERT_EQUAL(offset, model_param_count(m));
    /* 5*5*32+32 + 5*5*32*64+64 + 3136*128+128 + 128*10+10 */
    CU_ASSERT_EQUAL(model_param_count(m), 832 + 51264 + 401536 + 1290);
    double norms[8], total = 0.0;
    model_layer_norms(m, model_params(m), norms);
    for (int v = 0; v < 8; v++) {
        const model_view *vw = model_view_at(m, v);
        SS_CHECK_CLOSE(norms[v], device_nrm2(dev, vw->count, p + vw->offset), 0, 0);
        total += norms[v] * norms[v];
    }
    SS_CHECK_CLOSE(sqrt(total), device_nrm2(dev, model_param_count(m), p), 1e-9, 1e-9);
    model_destroy(m);
    device_close(dev);
}

/* Parameters of the CIFAR ResNet (no conv biases; batch norm gamma and beta; running statistics
 * are buffers, not parameters) in closed form: stem, three stages of n blocks, fc. */
static size_t resnet_params(int depth, int in_c, int k, int proj) {
    const size_t n = (size_t)(depth - 2) / 6;
    size_t p = 9 * (size_t)in_c * 16 + 32;
    p += n * (2 * 9 * 16 * 16 + 64);
    p += 9 * 16 * 32 + 9 * 32 * 32 + 128 + (n - 1) * (2 * 9 * 32 * 32 + 128);
    p += 9 * 32 * 64 + 9 * 64 * 64 + 256 + (n - 1) * (2 * 9 * 64 * 64 + 256);
    p += 64 * (size_t)k + (size_t)k;
    if (proj) p += 16 * 32 + 64 + 32 * 64 + 128;
    return p;
}

/* Counted without a model (model_spec_count); a model of the small ones is created as well and
 * must hold as many. */
static size_t params_of(device *dev, const char *text, int c, int h, int w, size_t *buffers) {
    model_spec s;
    CU_ASSERT_FATAL(model_spec_parse(&s, text, c, h, w, 10) == SS_OK);
    size_t p = 0, b = 0;
    CU_ASSERT_FATAL(model_spec_count(&s, &p, &b) == SS_OK);
    if (buffers) *buffers = b;
    if (p > 1000000) return p;
    model *m;
    CU_ASSERT_FATAL(model_create(dev, &s, 1, 2, &m) == SS_OK);
    CU_ASSERT_EQUAL(model_param_count(m), p);
    CU_ASSERT_EQUAL(model_buffer_count(m), b);
    model_destroy(m);
    return p;
}

/* ResNet-20 on CIFAR-10: 0.27M parameters (He et al. 2016, Table 6): 269,722 with option A,
 * 272,474 with option B; the other depths against the closed form; LeNet-5 (NIID-Bench's
 * simple-cnn) 62,006 on CIFAR-10 and 44,426 on Fashion-MNIST. */
static void test_param_counts(void) {
    device *dev = open_cpu();
    size_t buffers = 0;
    CU_ASSERT_EQUAL(params_of(dev, "resnet:20", 3, 32, 32, &buffers), 269722);
    CU_ASSERT_EQUAL(buffers, 2 * (16 + 6 * 16 + 6 * 32 + 6 * 64)); /* 19 batch norms */
    CU_ASSERT_EQUAL(params_of(dev, "resnet:20,proj", 3, 32, 32, &buffers), 272474);
    CU_ASSERT_EQUAL(buffers, 2 * (16 + 6 * 16 + 6 * 32 + 6 * 64 + 32 + 64));
    CU_ASSERT_EQUAL(params_of(dev, "resnet:20", 1, 28, 28, NULL), 269434);
    static const int depths[] = {32, 44, 56, 110};
    for (int i = 0; i < 4; i++) {
        char text[32];
        snprintf(text, sizeof text, "resnet:%d", depths[i]);
        CU_ASSERT_EQUAL(params_of(dev, text, 3, 32, 32, NULL), resnet_params(depths[i], 3, 10, 0));
        snprintf(text, sizeof text, "resnet:%d,proj", depths[i]);
        CU_ASSERT_EQUAL(params_of(dev, text, 1, 28, 28, NULL), resnet_params(depths[i], 1, 10, 1));
    }
    CU_ASSERT_EQUAL(resnet_params(20, 3, 10, 0), 269722);
    /* VGG with batch norm and bias-free convs: 9,228,362 and 14,724,042 on CIFAR-10 (with conv
     * biases, as often written, 2,752 and 4,224 more: 9.23M and 14.73M) */
    CU_ASSERT_EQUAL(params_of(dev, "vgg:11", 3, 32, 32, &buffers), 9228362);
    CU_ASSERT_EQUAL(buffers, 2 * 2752);
    CU_ASSERT_EQUAL(params_of(dev, "vgg:16", 3, 32, 32, &buffers), 14724042);
    CU_ASSERT_EQUAL(buffers, 2 * 4224);
    CU_ASSERT_EQUAL(params_of(dev, "vgg:13", 1, 28, 28, NULL),
                    9 * (64 + 64 * 64 + 64 * 128 + 128 * 128 + 128 * 256 + 256 * 256 + 256 * 512 +
                         3 * 512 * 512) +
                        2 * (2 * 64 + 2 * 128 + 2 * 256 + 4 * 512) + 512 * 10 + 10);
    CU_ASSERT_EQUAL(params_of(dev, "cnn:lenet", 3, 32, 32, &buffers), 62006);
    CU_ASSERT_EQUAL(buffers, 0);
    CU_ASSERT_EQUAL(params_of(dev, "cnn:lenet", 1, 28, 28, NULL), 44426);
    /* cnn:8,16,32,24: same padding, 28 -> 14 -> 7 */
    CU_ASSERT_EQUAL(params_of(dev, "cnn:8,16,32,24", 1, 28, 28, NULL),
                    25 * 8 + 8 + 25 * 8 * 16 + 16 + 7 * 7 * 16 * 32 + 32 + 32 * 24 + 24 + 24 * 10 +
                        10);
    device_close(dev);
}

/* resnet:8 (option A) on 1x8x8, 3 classes: forward FLOPs in closed form (the rule of layers.h);
 * the per-layer costs add up to the model's counts both ways. */
static void test_flops_resnet(void) {
    device *dev = open_cpu();
    model_spec s;
    CU_ASSERT_FATAL(model_spec_parse(&s, "resnet:8", 1, 8, 8, 3) == SS_OK);
    model *m;
    CU_ASSERT_FATAL(model_create(dev, &s, 1, 2, &m) == SS_OK);
    double stem = 2.0 * 64 * 9 * 16 + 6 * 1024 + 1024;           /* conv, bn, relu at 8x8x16 */
    double l1 = 2 * (2.0 * 64 * 144 * 16 + 6 * 1024) + 1024      /* two conv+bn, relu */
                + 1024 + 1024;                                   /* add, relu */
    double l2 = 2.0 * 16 * 144 * 32 + 6 * 512 + 512              /* stride 2: 8x8 -> 4x4 */
                + 2.0 * 16 * 288 * 32 + 6 * 512 + 16 * 16 + 512; /* add: 16 pixels x 16 */
    double l3 = 2.0 * 4 * 288 * 64 + 6 * 256 + 256 + 2.0 * 4 * 576 * 64 + 6 * 256 + 4 * 32 + 256;
    double head = (256 + 64) + (2 * 64 * 3 + 3) + 4 * 3; /* avgpool, fc, loss */
    SS_CHECK_CLOSE(model_forward_flops_per_sample(m), stem + l1 + l2 + l3 + head, 0, 0);
    double fwd = 0, bwd = 0, params = 0;
    int norms = 0, matmuls = 0;
    for (int i = 0; i < model_cost_layer_count(m); i++) {
        model_layer_cost c;
        model_cost_layer_at(m, i, &c);
        fwd += c.fwd_flops, bwd += c.bwd_flops, params += c.param_bytes;
        CU_ASSERT(c.kernels >= 1);
        norms += c.norm, matmuls += c.matmul;
    }
    SS_CHECK_CLOSE(fwd, model_forward_flops_per_sample(m), 0, 0);
    SS_CHECK_CLOSE(bwd, model_backward_flops_per_sample(m), 0, 0);
    SS_CHECK_CLOSE(params, model_param_bytes(m), 0, 0);
    CU_ASSERT_EQUAL(norms, 7);   /* stem and two a block */
    CU_ASSERT_EQUAL(matmuls, 8); /* 7 convs and fc */
    /* backward: the stem conv has no input gradient; each block's input has two consumers
     * (conv1 and the add), whose gradients are added: 1024 + 1024 + 512 floats */
    double stem_b = 2.0 * 64 * 9 * 16 + 11 * 1024 + 1024;
    double l1_b = 2 * (2 * 2.0 * 64 * 144 * 16 + 64 * 144 + 11 * 1024) + 1024 + 1024 + 1024;
    double l2_b = 2 * 2.0 * 16 * 144 * 32 + 16 * 144 + 11 * 512 + 512 + 2 * 2.0 * 16 * 288 * 32 +
                  16 * 288 + 11 * 512 + 512 + 1024;
    double l3_b = 2 * 2.0 * 4 * 288 * 64 + 4 * 288 + 11 * 256 + 256 + 2 * 2.0 * 4 * 576 * 64 +
                  4 * 576 + 11 * 256 + 256 + 512;
    double head_b = 256 + (2 * 2.0 * 64 * 3 + 3) + 2 * 3;
    SS_CHECK_CLOSE(model_backward_flops_per_sample(m), stem_b + l1_b + l2_b + l3_b + head_b, 0, 0);
    /* device memory: every activation and its gradient for each sample of max_batch (the
     * memory estimate of a run counts them): per sample, the input (64), 10 outputs at 8x8x16,
     * 7 at 4x4x32, 7 at 2x2x64, the pooled 64 and the 3 logits, each twice but the input; where
     * the device fuses the ReLUs after batch norm and add (the CPU), those 3 a stage are views */
    const int v = dev->ops->bn_fwd_train_act && dev->ops->add_fwd ? 3 : 0;
    const double per_sample =
        4.0 * (2 * ((10 - v) * 1024 + (7 - v) * 512 + (7 - v) * 256 + 64 + 3) + 64);
    model *m64;
    CU_ASSERT_FATAL(model_create(dev, &s, 1, 66, &m64) == SS_OK);
    const double grown = model_device_bytes(m64) - model_device_bytes(m);
    CU_ASSERT(grown >= 64 * per_sample && grown < 64 * 1.5 * per_sample);
    CU_ASSERT(model_device_bytes(m) > 4.0 * 2 * (double)model_param_count(m) + 2 * per_sample);
    model_destroy(m64);
    model_destroy(m);
    device_close(dev);
}

/* Batch norm's sums in double, each column's rows in order within blocks of
 * cpu_bn_block_rows(rows) rows and the blocks in order, whatever the width: the narrow widths (16
 * and 32 columns, summed with the columns in vector registers) and others (plain loop; 200 in two
 * groups of columns) give the bits of a scalar loop, in the forward pass (saved mean and inverse
 * deviation) and the backward pass (dgamma and dbeta, with and without the fused ReLU's mask).
 * 1,000 rows: three whole blocks and a partial one. */
static void test_batchnorm_sums_bits(void) {
    device *dev = open_cpu();
    static const int widths[] = {8, 16, 32, 48, 64, 200};
    const int rows = 1000, block = cpu_bn_block_rows(rows);
    CU_ASSERT_EQUAL(block, 256);
    CU_ASSERT_EQUAL(cpu_bn_block_rows(1 << 18), 256);
    CU_ASSERT_EQUAL(cpu_bn_block_rows((1 << 18) + 1), 512);
    rng r;
    rng_seed(&r, 17, RNG_STREAM_DATA);
    for (size_t k = 0; k < sizeof widths / sizeof *widths; k++) {
        const int cols = widths[k];
        const size_t n = (size_t)rows * cols;
        float *x = ss_malloc(n * sizeof(float)), *dy = ss_malloc(n * sizeof(float));
        float *mask = ss_malloc(n * sizeof(float)), *y = ss_malloc(n * sizeof(float));
        float *dx = ss_malloc(n * sizeof(float));
        fill_uniform(&r, x, n, -3.0f, 5.0f);
        fill_uniform(&r, dy, n, -1.0f, 1.0f);
        fill_uniform(&r, mask, n, -1.0f, 1.0f);
        float *gamma = ss_malloc(8 * (size_t)cols * sizeof(float)), *beta = gamma + cols;
        float *rm = beta + cols, *rv = rm + cols, *save = rv + cols, *dg = save + 2 * cols;
        float *db = dg + cols;
        fill_uniform(&r, gamma, 2 * (size_t)cols, 0.5f, 1.5f);
        for (int c = 0; c < cols; c++)
            rm[c] = 0.0f, rv[c] = 1.0f;
        dev->ops->bn_fwd_train(dev, rows, cols, x, gamma, beta, 0.1f, 1e-5f, rm, rv, save,
                               save + cols, y);
        int same_fwd = 1, same_bwd = 1, same_masked = 1;
        for (int c = 0; c < cols; c++) {
            double s = 0, q = 0;
            for (int b0 = 0; b0 < rows; b0 += block) {
                double bs = 0, bq = 0;
                for (int i = b0; i < rows && i < b0 + block; i++) {
                    const double v = x[(size_t)i * cols + c];
                    bs += v;
                    bq += v * v;
                }
                s += bs, q += bq;
            }
            const double mean = s / rows, var = fmax(q / rows - mean * mean, 0.0);
            same_fwd &=
                save[c] == (float)mean && save[cols + c] == (float)(1.0 / sqrt(var + 1e-5f));
        }
        for (int masked = 0; masked < 2; masked++) {
            if (masked)
                dev->ops->bn_bwd_masked(dev, rows, cols, x, dy, mask, gamma, save, save + cols, dg,
                                        db, dx);
            else
                dev->ops->bn_bwd(dev, rows, cols, x, dy, gamma, save, save + cols, dg, db, dx);
            for (int c = 0; c < cols; c++) {
                double sd = 0, sx = 0;
                for (int b0 = 0; b0 < rows; b0 += block) {
                    double bd = 0, bx = 0;
                    for (int i = b0; i < rows && i < b0 + block; i++) {
                        const size_t j = (size_t)i * cols + c;
                        const float g = masked && !(mask[j] > 0.0f) ? 0.0f : dy[j];
                        bd += g;
                        bx += g * (((double)x[j] - save[c]) * save[cols + c]);
                    }
                    sd += bd, sx += bx;
                }
                int *same = masked ? &same_masked : &same_bwd;
                *same &= db[c] == (float)sd && dg[c] == (float)sx;
            }
        }
        if (!(same_fwd && same_bwd && same_masked))
            fprintf(stderr, "\n  batch norm sums, %d columns: forward %d, backward %d, masked %d\n",
                    cols, same_fwd, same_bwd, same_masked);
        CU_ASSERT(same_fwd && same_bwd && same_masked);
        free(x), free(dy), free(mask), free(y), free(dx), free(gamma);
    }
    device_close(dev);
}

/* Batch normalization's running statistics as PyTorch's BatchNorm2d keeps them (momentum 0.1,
 * unbiased variance), and inference with them. */
static void test_batchnorm_running_stats(void) {
    device *dev = open_cpu();
    enum { ROWS = 5, C = 2 };
    const float x[ROWS * C] = {1, -2, 2, 0, 3, 4, 4, 1, 10, 2};
    float gamma[C] = {2.0f, 0.5f}, beta[C] = {0.1f, -1.0f}, run_mean[C] = {0, 0},
          run_var[C] = {1, 1};
    float save[2 * C], y[ROWS * C];
    dev->ops->bn_fwd_train(dev, ROWS, C, x, gamma, beta, 0.1f, 1e-5f, run_mean, run_var, save,
                           save + C, y);
    /* column 0: mean 4, biased var 10, unbiased 12.5; column 1: mean 1, var 4, unbiased 5 */
    SS_CHECK_CLOSE(run_mean[0], 0.4, 0, 1e-6);
    SS_CHECK_CLOSE(run_mean[1], 0.1, 0, 1e-6);
    SS_CHECK_CLOSE(run_var[0], 0.9 + 0.1 * 12.5, 0, 1e-6);
    SS_CHECK_CLOSE(run_var[1], 0.9 + 0.1 * 5.0, 0, 1e-6);
    SS_CHECK_CLOSE(y[0], 2.0 * (1 - 4) / sqrt(10 + 1e-5) + 0.1, 0, 1e-6);
    SS_CHECK_CLOSE(y[9], 0.5 * (2 - 1) / sqrt(4 + 1e-5) - 1.0, 0, 1e-6);
    dev->ops->bn_fwd_infer(dev, ROWS, C, x, gamma, beta, run_mean, run_var, 1e-5f, y);
    SS_CHECK_CLOSE(y[8], 2.0 * (10 - 0.4) / sqrt(2.15 + 1e-5) + 0.1, 0, 1e-6);
    SS_CHECK_CLOSE(y[3], 0.5 * (0 - 0.1) / sqrt(1.4 + 1e-5) - 1.0, 0, 1e-6);
    /* in a model: a training pass moves the buffers, evaluation reads them and leaves them */
    model_spec s;
    CU_ASSERT_FATAL(model_spec_parse(&s, "resnet:8", 1, 6, 6, 3) == SS_OK);
    model *m;
    CU_ASSERT_FATAL(model_create(dev, &s, 3, 4, &m) == SS_OK);
    const size_t nb = model_buffer_count(m);
    CU_ASSERT_EQUAL_FATAL(model_buffer_view_count(m), 2 * 7); /* stem, 2 a block */
    CU_ASSERT_STRING_EQUAL(model_buffer_view_at(m, 0)->name, "stem.bn1.running_mean");
    CU_ASSERT_STRING_EQUAL(model_buffer_view_at(m, 1)->name, "stem.bn1.running_var");
    CU_ASSERT_EQUAL(model_buffer_view_at(m, 1)->offset, 16);
    float *before = ss_malloc(nb * sizeof(float));
    memcpy(before, model_buffers(m), nb * sizeof(float));
    CU_ASSERT(before[0] == 0.0f && before[16] == 1.0f);
    float xs[4 * 36];
    uint8_t ys[4] = {0, 1, 2, 1};
    rng r;
    rng_seed(&r, 9, RNG_STREAM_DATA);
    fill_uniform(&r, xs, 4 * 36, 0.0f, 1.0f);
    double l1, l2;
    model_evaluate(m, xs, ys, 4, &l1, NULL);
    CU_ASSERT(memcmp(before, model_buffers(m), nb * sizeof(float)) == 0);
    model_forward_backward(m, xs, ys, 4);
    CU_ASSERT(memcmp(before, model_buffers(m), nb * sizeof(float)) != 0);
    memcpy(before, model_buffers(m), nb * sizeof(float));
    model_evaluate(m, xs, ys, 4, &l2, NULL);
    CU_ASSERT(memcmp(before, model_buffers(m), nb * sizeof(float)) == 0);
    CU_ASSERT(l1 != l2); /* the running statistics changed the evaluation */
    free(before);
    model_destroy(m);
    device_close(dev);
}

static void test_model_spec_parse(void) {
    model_spec s;
    CU_ASSERT_EQUAL(model_spec_parse(&s, "mlp:512,128", 1, 28, 28, 10), SS_OK);
    CU_ASSERT_EQUAL(s.arch, MODEL_ARCH_MLP);
    CU_ASSERT_EQUAL(s.n_hidden, 2);
    CU_ASSERT_EQUAL(s.hidden[0], 512);
    CU_ASSERT_EQUAL(s.hidden[1], 128);
    CU_ASSERT_EQUAL(model_spec_parse(&s, "mlp", 1, 28, 28, 10), SS_OK);
    CU_ASSERT(s.n_hidden == 2 && s.hidden[0] == 256 && s.hidden[1] == 256);
    CU_ASSERT_EQUAL(model_spec_parse(&s, "cnn", 1, 28, 28, 10), SS_OK);
    CU_ASSERT(s.conv_channels[0] == 32 && s.conv_channels[1] == 64 && s.cnn_dense[0] == 128);
    CU_ASSERT_EQUAL(model_spec_parse(&s, "logreg", 1, 28, 28, 10), SS_OK);
    CU_ASSERT_EQUAL(s.arch, MODEL_ARCH_LOGREG);
    CU_ASSERT_EQUAL(model_spec_parse(&s, "mlp:", 1, 28, 28, 10), SS_EUSAGE);
    CU_ASSERT_EQUAL(model_spec_parse(&s, "mlp:12,x", 1, 28, 28, 10), SS_EUSAGE);
    CU_ASSERT_EQUAL(model_spec_parse(&s, "cnn:3", 1, 28, 28, 10), SS_EUSAGE);
    CU_ASSERT_EQUAL(model_spec_parse(&s, "cnn:3,4", 1, 28, 28, 10), SS_EUSAGE);
    CU_ASSERT(strstr(ss_error_message(), "cnn:C1,C2,D1") != NULL);
    CU_ASSERT_EQUAL(model_spec_parse(&s, "cnn:3,4,5,6", 1, 28, 28, 10), SS_OK);
    CU_ASSERT(s.conv_channels[0] == 3 && s.conv_channels[1] == 4 && s.n_cnn_dense == 2 &&
              s.cnn_dense[0] == 5 && s.cnn_dense[1] == 6 && !s.cnn_valid);
    CU_ASSERT_EQUAL(model_spec_parse(&s, "cnn:lenet", 1, 28, 28, 10), SS_OK);
    CU_ASSERT(s.conv_channels[0] == 6 && s.conv_channels[1] == 16 && s.n_cnn_dense == 2 &&
              s.cnn_dense[0] == 120 && s.cnn_dense[1] == 84 && s.cnn_valid);
    CU_ASSERT(!model_spec_has_buffers(&s));
    CU_ASSERT_EQUAL(model_spec_parse(&s, "resnet", 1, 28, 28, 10), SS_OK);
    CU_ASSERT(s.arch == MODEL_ARCH_RESNET && s.depth == 20 && !s.resnet_proj);
    CU_ASSERT(model_spec_has_buffers(&s));
    CU_ASSERT_EQUAL(model_spec_parse(&s, "resnet:110,proj", 1, 28, 28, 10), SS_OK);
    CU_ASSERT(s.depth == 110 && s.resnet_proj);
    CU_ASSERT_EQUAL(model_spec_parse(&s, "resnet:21", 1, 28, 28, 10), SS_EUSAGE);
    CU_ASSERT(strstr(ss_error_message(), "6n+2") != NULL);
    CU_ASSERT_EQUAL(model_spec_parse(&s, "resnet:20,B", 1, 28, 28, 10), SS_EUSAGE);
    CU_ASSERT_EQUAL(model_spec_parse(&s, "vgg:16", 3, 32, 32, 10), SS_OK);
    CU_ASSERT(s.arch == MODEL_ARCH_VGG && s.depth == 16 && s.vgg_width == 64);
    CU_ASSERT(model_spec_has_buffers(&s));
    CU_ASSERT_EQUAL(model_spec_parse(&s, "vgg:15", 3, 32, 32, 10), SS_EUSAGE);
    CU_ASSERT_EQUAL(model_spec_parse(&s, "transformer", 1, 28, 28, 10), SS_EUSAGE);
    CU_ASSERT(strstr(ss_error_message(), "logreg") != NULL);
    CU_ASSERT(strstr(ss_error_message(), "resnet:D") != NULL);
}

static void test_device_open(void) {
    device *dev = NULL;
    char notice[256], reason[256];
    CU_ASSERT_EQUAL(device_open("tpu", &dev, notice, sizeof notice), SS_EUSAGE);
    CU_ASSERT_EQUAL(device_open("auto", &dev, notice, sizeof notice), SS_OK);
    if (!device_cuda_available(reason, sizeof reason)) {
        CU_ASSERT(strncmp(notice, "syncsim: no usable GPU", 22) == 0);
        CU_ASSERT(strstr(notice, reason) != NULL);
        CU_ASSERT_EQUAL(device_get_kind(dev), DEVICE_KIND_CPU);
        device *cuda = NULL;
        CU_ASSERT_EQUAL(device_open("cuda", &cuda, notice, sizeof notice), SS_EDEVICE);
        CU_ASSERT_PTR_NULL(cuda);
    } else {
        CU_ASSERT_EQUAL(notice[0], '\0');
    }
    device_close(dev);
    CU_ASSERT_EQUAL(device_open("cpu", &dev, notice, sizeof notice), SS_OK);
    CU_ASSERT(strncmp(device_name(dev), "cpu", 3) == 0);
    device_close(dev);
}

/* ---- SGD and schedules ---- */

static void test_sgd_momentum_wd(void) {
    device *dev = open_cpu();
    float w[3] = {1.0f, -2.0f, 0.5f}, g[3] = {0.1f, 0.2f, -0.3f};
    float *wd_ = device_alloc(dev, 3), *gd = device_alloc(dev, 3);
    device_upload(dev, wd_, w, 3);
    device_upload(dev, gd, g, 3);
    sgd_state *s = sgd_create(dev, 3);
    /* step 1: g' = g + 0.01 w; v = g'; w -= 0.1 v   (w0 = 1: g' = 0.11, w = 0.989)
     * step 2: g' = g + 0.01 w; v = 0.9 v + g'; w -= 0.1 v
     *         (w0: g' = 0.10989, v = 0.099 + 0.10989 = 0.20889, w = 0.989 - 0.020889) */
    sgd_step(s, wd_, gd, 0.1f, 0.9f, 0.01f);
    SS_CHECK_CLOSE(wd_[0], 0.989, 1e-7, 0);
    sgd_step(s, wd_, gd, 0.1f, 0.9f, 0.01f);
    SS_CHECK_CLOSE(wd_[0], 0.968111, 1e-6, 0);
    double ref_w[3], ref_v[3];
    for (int i = 0; i < 3; i++) {
        double wi = w[i], vi = 0.0;
        for (int step = 0; step < 2; step++) {
            double gi = g[i] + 0.01 * wi;
            vi = step ? 0.9 * vi + gi : gi;
            wi -= 0.1 * vi;
        }
        ref_w[i] = wi, ref_v[i] = vi;
    }
    const float *v = sgd_momentum_buffer(s);
    for (int i = 0; i < 3; i++) {
        SS_CHECK_CLOSE(wd_[i], ref_w[i], 1e-6, 1e-6);
        SS_CHECK_CLOSE(v[i], ref_v[i], 1e-6, 1e-6);
    }
    sgd_reset(s);
    CU_ASSERT(v[0] == 0.0f && v[1] == 0.0f && v[2] == 0.0f);
    /* without momentum: plain w -= lr (g + wd w), buffer untouched */
    device_upload(dev, wd_, w, 3);
    sgd_step(s, wd_, gd, 0.5f, 0.0f, 0.1f);
    for (int i = 0; i < 3; i++)
        SS_CHECK_CLOSE(wd_[i], w[i] - 0.5 * (g[i] + 0.1 * w[i]), 1e-6, 0);
    CU_ASSERT(v[0] == 0.0f);
    SS_CHECK_CLOSE(sgd_step_flops(10, 0.9f, 0.01f), 60.0, 0, 0);
    SS_CHECK_CLOSE(sgd_step_flops(10, 0.0f, 0.0f), 20.0, 0, 0);
    sgd_destroy(s);
    device_free(dev, wd_);
    device_free(dev, gd);
    device_close(dev);
}

static void test_lr_schedules(void) {
    lr_schedule s = {.base_lr = 0.1, .steps_per_epoch = 10, .total_steps = 100};
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "constant"), SS_OK);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 12345), 0.1, 0, 0);
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "step:2:0.5"), SS_OK);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 0), 0.1, 1e-15, 0);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 19), 0.1, 1e-15, 0);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 20), 0.05, 1e-15, 0);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 45), 0.025, 1e-15, 0);
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "step"), SS_OK);
    SS_CHECK_CLOSE(s.step_epochs, 30.0, 0, 0);
    SS_CHECK_CLOSE(s.gamma, 0.1, 0, 0);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 300), 0.01, 1e-15, 0);
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "cosine:0.01"), SS_OK);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 0), 0.1, 1e-15, 0);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 50), 0.055, 1e-12, 0);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 100), 0.01, 1e-15, 0);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 200), 0.01, 1e-15, 0);
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "cosine"), SS_OK);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 25), 0.1 * (1 + cos(M_PI / 4)) / 2, 1e-12, 0);
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "linear"), SS_EUSAGE);
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "step:x"), SS_EUSAGE);
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "step:0"), SS_EUSAGE);
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "cosine:-1"), SS_EUSAGE);
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "constant:1"), SS_EUSAGE);
}

/* ---- vector ops against references ---- */

static void test_vector_ops(void) {
    device *dev = open_cpu();
    enum { N = 10007, K = 3 }; /* not a multiple of any block size */
    rng r;
    rng_seed(&r, 9, RNG_STREAM_DATA);
    float *xs[K], *out = device_alloc(dev, N), *ref = ss_malloc(N * sizeof(float));
    for (int j = 0; j < K; j++) {
        xs[j] = device_alloc(dev, N);
        fill_uniform(&r, xs[j], N, -2.0f, 2.0f);
    }
    /* mean: documented order, bit for bit */
    for (int i = 0; i < N; i++)
        ref[i] = (xs[0][i] + xs[1][i] + xs[2][i]) * (1.0f / 3.0f);
    device_mean(dev, N, K, (const float *const *)xs, out);
    CU_ASSERT(memcmp(out, ref, N * sizeof(float)) == 0);
    device_mean(dev, N, K, (const float *const *)xs, xs[0]); /* out aliases xs[0] */
    CU_ASSERT(memcmp(xs[0], ref, N * sizeof(float)) == 0);
    device_mean(dev, N, 1, (const float *const *)xs, out);
    CU_ASSERT(memcmp(out, xs[0], N * sizeof(float)) == 0);
    /* nrm2 against a double reference */
    double ss = 0.0;
    for (int i = 0; i < N; i++)
        ss += (double)xs[1][i] * xs[1][i];
    SS_CHECK_CLOSE(device_nrm2(dev, N, xs[1]), sqrt(ss), 0, 1e-12);
    SS_CHECK_CLOSE(device_nrm2(dev, 0, xs[1]), 0.0, 0, 0);
    /* axpy, scale */
    memcpy(ref, xs[2], N * sizeof(float));
    device_axpy(dev, N, -0.5f, xs[1], xs[2]);
    for (int i = 0; i < N; i++)
        CU_ASSERT(xs[2][i] == ref[i] + -0.5f * xs[1][i]);
    memcpy(ref, xs[2], N * sizeof(float));
    device_scale(dev, N, 0.25f, xs[2]);
    for (int i = 0; i < N; i++)
        CU_ASSERT(xs[2][i] == ref[i] * 0.25f);
    /* masked copy */
    uint8_t *mask = ss_malloc(N);
    for (int i = 0; i < N; i++)
        mask[i] = (uint8_t)(rng_below(&r, 3) == 0 ? 0 : 1 + i % 7);
    memcpy(ref, out, N * sizeof(float));
    device_masked_copy(dev, N, mask, xs[1], out);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += out[i] != (mask[i] ? xs[1][i] : ref[i]);
    CU_ASSERT_EQUAL(bad, 0);
    /* copy, upload, download */
    float host[5] = {1, 2, 3, 4, 5}, back[5];
    device_upload(dev, out, host, 5);
    device_copy(dev, xs[1], out, 5);
    device_download(dev, back, xs[1], 5);
    CU_ASSERT(memcmp(back, host, sizeof host) == 0);
    free(mask);
    free(ref);
    for (int j = 0; j < K; j++)
        device_free(dev, xs[j]);
    device_free(dev, out);
    device_close(dev);
}

/* ---- training: determinism and learning ---- */

/* Trains `steps` SGD steps on fixed synthetic data; fills params (P floats, malloc'ed). */
static double train_steps(const char *arch, uint64_t seed, int steps, int batch, float lr,
                          float **params_out, size_t *count_out, double *first_loss) {
    device *dev = open_cpu();
    model_spec s;
    CU_ASSERT_FATAL(model_spec_parse(&s, arch, 1, 12, 12, 4) == SS_OK);
    if (s.arch == MODEL_ARCH_CNN)
        s.conv_channels[0] = 8, s.conv_channels[1] = 16, s.cnn_dense[0] = 32;
    model *m;
    CU_ASSERT_FATAL(model_create(dev, &s, seed, batch, &m) == SS_OK);
    sgd_state *opt = sgd_create(dev, model_param_count(m));
    /* learnable data: class c has a bright 6x6 quadrant c plus noise */
    const int d = 144, n = 4 * batch;
    float *x = ss_malloc((size_t)n * d * sizeof(float));
    uint8_t *y = ss_malloc((size_t)n);
    rng r;
    rng_seed(&r, 1234, RNG_STREAM_DATA);
    for (int i = 0; i < n; i++) {
        int c = (int)rng_below(&r, 4);
        y[i] = (uint8_t)c;
        for (int p = 0; p < d; p++) {
            int row = p / 12, col = p % 12;
            int quadrant = (row >= 6) * 2 + (col >= 6);
            x[(size_t)i * d + p] = 0.3f * (float)rng_uniform(&r) + (quadrant == c ? 0.7f : 0.0f);
        }
    }
    double loss = 0.0;
    for (int t = 0; t < steps; t++) {
        int b0 = (t % 4) * batch;
        loss = model_forward_backward(m, x + (size_t)b0 * d, y + b0, batch);
        if (t == 0 && first_loss) *first_loss = loss;
        sgd_step(opt, model_params(m), model_grads(m), lr, 0.9f, 1e-4f);
    }
    double eval_loss;
    model_evaluate(m, x, y, (size_t)n, &eval_loss, NULL);
    *count_out = model_param_count(m);
    *params_out = ss_malloc(*count_out * sizeof(float));
    device_download(dev, *params_out, model_params(m), *count_out);
    sgd_destroy(opt);
    model_destroy(m);
    free(x);
    free(y);
    device_close(dev);
    return eval_loss;
}

static void test_determinism(void) {
    static const char *const archs[] = {"mlp", "cnn", "resnet:8"};
    for (int a = 0; a < 3; a++) {
        float *p1, *p2, *p3;
        size_t n1, n2, n3;
        train_steps(archs[a], 7, 3, 16, 0.05f, &p1, &n1, NULL);
        train_steps(archs[a], 7, 3, 16, 0.05f, &p2, &n2, NULL);
        train_steps(archs[a], 8, 3, 16, 0.05f, &p3, &n3, NULL);
        CU_ASSERT_EQUAL_FATAL(n1, n2);
        CU_ASSERT(memcmp(p1, p2, n1 * sizeof(float)) == 0); /* same seed: bit-identical */
        CU_ASSERT(memcmp(p1, p3, n1 * sizeof(float)) != 0); /* another seed: another model */
        free(p1);
        free(p2);
        free(p3);
    }
}

/* ---- model_forward_backward_each: the hooks of real mode's overlap ---- */

typedef struct hook_log {
    model *m;
    int calls, order_ok, n;
    size_t *offset; /* (n + 1) each cost layer's first parameter, then P */
    float *seen;    /* (P) each layer's gradient as it was when its hook fired */
} hook_log;

static void hook_record(void *ctx, int layer) {
    hook_log *h = ctx;
    /* the loss (layer n) first, then n - 1 down to 0, each once */
    if (layer != h->n - h->calls) h->order_ok = 0;
    h->calls++;
    size_t lo = h->offset[layer], count = h->offset[layer + 1] - lo;
    memcpy(h->seen + lo, model_grads(h->m) + lo, count * sizeof(float));
}

/* Every layer's hook fires once, last layer first, when the backward pass has written that
 * layer's gradient for good: what it saw equals the finished gradient, bit for bit, and the
 * pass equals model_forward_backward. The cnn has a fused conv -> ReLU -> max-pool block. */
static void test_grad_hooks(void) {
    static const char *const archs[] = {"mlp", "cnn"};
    device *dev = open_cpu();
    for (int a = 0; a < 2; a++) {
        model_spec s;
        CU_ASSERT_FATAL(model_spec_parse(&s, archs[a], 1, 12, 12, 4) == SS_OK);
        if (s.arch == MODEL_ARCH_CNN)
            s.conv_channels[0] = 8, s.conv_channels[1] = 16, s.cnn_dense[0] = 32;
        model *m;
        const int batch = 8;
        CU_ASSERT_FATAL(model_create(dev, &s, 3, batch, &m) == SS_OK);
        const size_t p = model_param_count(m);
        float *x = ss_malloc(sizeof(float) * (size_t)batch * 144);
        rng r;
        rng_seed(&r, 21, RNG_STREAM_DATA);
        fill_uniform(&r, x, (size_t)batch * 144, 0, 1);
        uint8_t y[8] = {0, 1, 2, 3, 0, 1, 2, 3};
        const int n = model_cost_layer_count(m) - 1; /* the loss's index */
        hook_log h = {.m = m, .order_ok = 1, .n = n};
        h.offset = ss_malloc(sizeof(size_t) * (size_t)(n + 2));
        h.offset[0] = 0;
        for (int i = 0; i <= n; i++) {
            model_layer_cost c;
            model_cost_layer_at(m, i, &c);
            h.offset[i + 1] = h.offset[i] + (size_t)(c.param_bytes / sizeof(float));
        }
        CU_ASSERT_EQUAL(h.offset[n + 1], p);
        h.seen = ss_malloc(p * sizeof(float));
        double l0 = model_forward_backward(m, x, y, batch);
        float *ref = ss_malloc(p * sizeof(float));
        memcpy(ref, model_grads(m), p * sizeof(float));
        memset(model_grads(m), 0, p * sizeof(float)); /* a hook that fires early sees zeros */
        double l1 = model_forward_backward_each(m, x, y, batch, hook_record, &h);
        CU_ASSERT_EQUAL(l1, l0);
        CU_ASSERT_EQUAL(h.calls, n + 1);
        CU_ASSERT_TRUE(h.order_ok);
        CU_ASSERT_EQUAL(memcmp(h.seen, ref, p * sizeof(float)), 0);
        CU_ASSERT_EQUAL(memcmp(model_grads(m), ref, p * sizeof(float)), 0);
        free(ref);
        free(h.seen);
        free(h.offset);
        free(x);
        model_destroy(m);
    }
    device_close(dev);
}

static void test_loss_decreases(void) {
    static const char *const archs[] = {"logreg", "mlp", "cnn"};
    for (int a = 0; a < 3; a++) {
        float *p;
        size_t n;
        double first = 0.0;
        double last = train_steps(archs[a], 1, 40, 32, 0.05f, &p, &n, &first);
        if (!(last < 0.25 * first))
            fprintf(stderr, "\n  %s: loss %.4f -> %.4f", archs[a], first, last);
        CU_ASSERT(last < 0.25 * first);
        free(p);
    }
}

/* conv -> ReLU -> max-pool fused (ReLU in the conv's bias pass, its mask in the pooling's
 * backward pass) against the three layers one after the other: the same bits everywhere. Random
 * weights make about half the conv outputs 0 after the ReLU, so windows with ties at 0 occur. */
static void run_conv_relu_pool(device *dev, int fused, const float *x, const float *dy3,
                               const float *params, size_t np, float *y3, float *dx, float *grads) {
    const int b = 3, h = 6, w = 6, c = 2, oc = 4;
    layer l[3];
    layer_init_conv2d(&l[0], "conv", h, w, c, oc, 3, 1);
    layer_init_relu(&l[1], "relu", h, w, oc);
    layer_init_maxpool2(&l[2], "pool", h, w, oc);
    if (fused) layer_fuse_relu(l, 3);
    CU_ASSERT_EQUAL(layer_is_view(&l[1]), fused);
    float *p = device_alloc(dev, np), *g = device_alloc(dev, np);
    memcpy(p, params, np * sizeof(float));
    CU_ASSERT_EQUAL(layer_bind(&l[0], p, g, 0), np);
    layer_alloc_scratch(dev, &l[0], b);
    const size_t n1 = (size_t)b * h * w * oc;
    float *a1 = device_alloc(dev, n1), *a2 = fused ? a1 : device_alloc(dev, n1);
    float *d1 = device_alloc(dev, n1), *d2 = fused ? d1 : device_alloc(dev, n1);
    layer_forward(dev, &l[0], b, x, a1);
    layer_forward(dev, &l[1], b, a1, a2);
    layer_forward(dev, &l[2], b, a2, y3);
    layer_backward(dev, &l[2], b, a2, y3, dy3, d2);
    layer_backward(dev, &l[1], b, a1, a2, d2, d1);
    layer_backward(dev, &l[0], b, x, a1, d1, dx);
    memcpy(grads, g, np * sizeof(float));
    layer_free_scratch(dev, &l[0]);
    if (!fused) device_free(dev, a2), device_free(dev, d2);
    device_free(dev, a1), device_free(dev, d1), device_free(dev, p), device_free(dev, g);
}

static void test_fused_relu(void) {
    device *dev = open_cpu();
    const size_t nx = 3 * 6 * 6 * 2, ny = 3 * 3 * 3 * 4, np = 4 * 3 * 3 * 2 + 4;
    float x[3 * 6 * 6 * 2], dy[3 * 3 * 3 * 4], params[4 * 3 * 3 * 2 + 4];
    float y[2][3 * 3 * 3 * 4], dx[2][3 * 6 * 6 * 2], grads[2][4 * 3 * 3 * 2 + 4];
    rng r;
    rng_seed(&r, 11, RNG_STREAM_DATA);
    fill_uniform(&r, x, nx, -1, 1);
    fill_uniform(&r, dy, ny, -1, 1);
    fill_uniform(&r, params, np, -0.5f, 0.5f);
    for (int fused = 0; fused < 2; fused++)
        run_conv_relu_pool(dev, fused, x, dy, params, np, y[fused], dx[fused], grads[fused]);
    int zeros = 0;
    for (size_t i = 0; i < ny; i++)
        zeros += y[0][i] == 0.0f;
    CU_ASSERT(zeros > 0); /* some windows are all 0: the mask matters */
    CU_ASSERT(memcmp(y[0], y[1], sizeof y[0]) == 0);
    CU_ASSERT(memcmp(dx[0], dx[1], sizeof dx[0]) == 0);
    CU_ASSERT(memcmp(grads[0], grads[1], sizeof grads[0]) == 0);
    device_close(dev);
}

/* ---- im2col and col2im against direct definitions ----
 * col[(b, oh, ow), (ki, kj, c)] = x[b, oh - pad + ki, ow - pad + kj, c] (0 outside), and col2im
 * adds every col entry into the input element it was read from, entries in row order of col
 * (output pixels ascending) into a zeroed dx: the CPU kernels must give these values bit for bit,
 * for channel counts below, at and above the kernels' blocks and for every padding. */

static float im2col_ref(const conv_geom *g, const float *x, size_t r, int ki, int kj, int c) {
    int b = (int)(r / ((size_t)g->out_h * g->out_w)),
        rest = (int)(r % ((size_t)g->out_h * g->out_w));
    int ih = rest / g->out_w - g->pad + ki, iw = rest % g->out_w - g->pad + kj;
    if (ih < 0 || ih >= g->in_h || iw < 0 || iw >= g->in_w) return 0.0f;
    return x[(((size_t)b * g->in_h + ih) * g->in_w + iw) * g->in_c + c];
}

static void col2im_ref(const conv_geom *g, const float *col, float *dx) {
    memset(dx, 0, (size_t)g->batch * g->in_h * g->in_w * g->in_c * sizeof(float));
    size_t rows = (size_t)g->batch * g->out_h * g->out_w, i = 0;
    for (size_t r = 0; r < rows; r++) {
        int b = (int)(r / ((size_t)g->out_h * g->out_w));
        int rest = (int)(r % ((size_t)g->out_h * g->out_w));
        for (int ki = 0; ki < g->kh; ki++)
            for (int kj = 0; kj < g->kw; kj++)
                for (int c = 0; c < g->in_c; c++, i++) {
                    int ih = rest / g->out_w - g->pad + ki, iw = rest % g->out_w - g->pad + kj;
                    if (ih < 0 || ih >= g->in_h || iw < 0 || iw >= g->in_w) continue;
                    dx[(((size_t)b * g->in_h + ih) * g->in_w + iw) * g->in_c + c] += col[i];
                }
    }
}

static void check_im2col_case(device *dev, int h, int w, int c, int k, int pad) {
    conv_geom g = {.batch = 2, .in_h = h, .in_w = w, .in_c = c, .kh = k, .kw = k, .pad = pad};
    g.out_h = h + 2 * pad - k + 1, g.out_w = w + 2 * pad - k + 1;
    size_t nx = (size_t)g.batch * h * w * c, rows = (size_t)g.batch * g.out_h * g.out_w;
    size_t ncol = rows * k * k * c;
    float *x = device_alloc(dev, nx), *col = device_alloc(dev, ncol), *dx = device_alloc(dev, nx);
    float *ref = ss_malloc(nx * sizeof(float));
    rng r;
    rng_seed(&r, (uint64_t)(h * 1000 + c * 10 + pad), RNG_STREAM_DATA);
    fill_uniform(&r, x, nx, -1, 1);
    dev->ops->im2col(dev, &g, x, col);
    int bad = 0;
    for (size_t row = 0, i = 0; row < rows; row++)
        for (int ki = 0; ki < k; ki++)
            for (int kj = 0; kj < k; kj++)
                for (int ch = 0; ch < c; ch++, i++)
                    bad += col[i] != im2col_ref(&g, x, row, ki, kj, ch);
    fill_uniform(&r, col, ncol, -1, 1);
    dev->ops->col2im(dev, &g, col, dx);
    col2im_ref(&g, col, ref);
    bad += memcmp(dx, ref, nx * sizeof(float)) != 0;
    if (bad)
        fprintf(stderr, "\n  im2col/col2im %dx%dx%d k %d pad %d: %d mismatches", h, w, c, k, pad,
                bad);
    CU_ASSERT_EQUAL(bad, 0);
    free(ref);
    device_free(dev, x);
    device_free(dev, col);
    device_free(dev, dx);
}

static void test_im2col_col2im(void) {
    device *dev = open_cpu();
    static const int channels[] = {1, 3, 32, 64, 70};
    for (size_t i = 0; i < sizeof channels / sizeof channels[0]; i++)
        for (int pad = 0; pad < 5; pad++)
            check_im2col_case(dev, 7, 6, channels[i], 5, pad);
    check_im2col_case(dev, 3, 9, 2, 3, 1); /* kernel taller than half the image */
    check_im2col_case(dev, 4, 4, 5, 1, 0); /* 1x1 */
    device_close(dev);
}

/* ---- direct convolution against scalar fused multiply-add chains ----
 * Each output of conv_direct_* is one fmaf chain in the order conv_direct.h states, so these
 * references must match bit for bit: every tile shape (pixel and channel remainders, 16, 48 = 32
 * + 16 and 80 = 64 + 16 output channels), one input channel, padding 0 to kernel - 1. */

typedef struct direct_case {
    conv_geom g;
    int oc;
    const float *x, *w, *bias, *dy;
} direct_case;

static float dc_x(const direct_case *d, int b, int ih, int iw, int c) {
    const conv_geom *g = &d->g;
    if (ih < 0 || ih >= g->in_h || iw < 0 || iw >= g->in_w) return 0.0f;
    return d->x[(((size_t)b * g->in_h + ih) * g->in_w + iw) * g->in_c + c];
}

static float dc_dy(const direct_case *d, int b, int oh, int ow, int o) {
    const conv_geom *g = &d->g;
    if (oh < 0 || oh >= g->out_h || ow < 0 || ow >= g->out_w) return 0.0f;
    return d->dy[(((size_t)b * g->out_h + oh) * g->out_w + ow) * d->oc + o];
}

static float dc_w(const direct_case *d, int o, int ki, int kj, int c) {
    const conv_geom *g = &d->g;
    return d->w[(((size_t)o * g->kh + ki) * g->kw + kj) * g->in_c + c];
}

static int dc_inside(int i, int n) {
    return i >= 0 && i < n;
}

/* the number of outputs of y (relu or not), dw and dx that differ from the references: the
 * chains leave out the terms whose x or dy lies in a row above or below the image and, where
 * conv_direct_skips_frame, also those in a column left or right of it */
static int direct_mismatches(const direct_case *d, const float *y, int relu, const float *dw,
                             const float *dx) {
    const conv_geom *g = &d->g;
    const int skip = conv_direct_skips_frame(g), st = conv_stride(g);
    int bad = 0;
    for (int b = 0; b < g->batch; b++)
        for (int oh = 0; oh < g->out_h; oh++)
            for (int ow = 0; ow < g->out_w; ow++)
                for (int o = 0; o < d->oc; o++, y++) {
                    float a = 0.0f;
                    for (int ki = 0; ki < g->kh; ki++)
                        for (int kj = 0; kj < g->kw; kj++) {
                            const int ih = oh * st - g->pad + ki, iw = ow * st - g->pad + kj;
                            if (!dc_inside(ih, g->in_h) || (skip && !dc_inside(iw, g->in_w)))
                                continue;
                            for (int c = 0; c < g->in_c; c++)
                                a = fmaf(dc_x(d, b, ih, iw, c), dc_w(d, o, ki, kj, c), a);
                        }
                    a = a + d->bias[o];
                    bad += *y != (relu ? (a > 0.0f ? a : 0.0f) : a);
                }
    for (int o = 0; o < d->oc; o++)
        for (int ki = 0; ki < g->kh; ki++)
            for (int kj = 0; kj < g->kw; kj++)
                for (int c = 0; c < g->in_c; c++, dw++) {
                    float a = 0.0f;
                    for (int b = 0; b < g->batch; b++)
                        for (int oh = 0; oh < g->out_h; oh++)
                            for (int ow = 0; ow < g->out_w; ow++) {
                                const int ih = oh * st - g->pad + ki, iw = ow * st - g->pad + kj;
                                if (!dc_inside(ih, g->in_h) || (skip && !dc_inside(iw, g->in_w)))
                                    continue;
                                a = fmaf(dc_x(d, b, ih, iw, c), dc_dy(d, b, oh, ow, o), a);
                            }
                    bad += *dw != a;
                }
    if (!dx) return bad;
    const int qh = g->kh - 1 - g->pad, qw = g->kw - 1 - g->pad;
    for (int b = 0; b < g->batch; b++)
        for (int ih = 0; ih < g->in_h; ih++)
            for (int iw = 0; iw < g->in_w; iw++)
                for (int c = 0; c < g->in_c; c++, dx++) {
                    float a = 0.0f;
                    for (int p = 0; p < g->kh; p++)
                        for (int q = 0; q < g->kw; q++) {
                            const int oh = ih + p - qh, ow = iw + q - qw;
                            if (!dc_inside(oh, g->out_h) || (skip && !dc_inside(ow, g->out_w)))
                                continue;
                            for (int o = 0; o < d->oc; o++)
                                a = fmaf(dc_dy(d, b, oh, ow, o),
                                         dc_w(d, o, g->kh - 1 - p, g->kw - 1 - q, c), a);
                        }
                    bad += *dx != a;
                }
    return bad;
}

/* db(o): the rows of dy added in order from 0, as bias_grad does */
static int bias_mismatches(const direct_case *d, const float *db) {
    const size_t rows = (size_t)d->g.batch * d->g.out_h * d->g.out_w;
    int bad = 0;
    for (int o = 0; o < d->oc; o++) {
        float a = 0.0f;
        for (size_t r = 0; r < rows; r++)
            a += d->dy[r * d->oc + o];
        bad += db[o] != a;
    }
    return bad;
}

/* The strided data gradient's chains (conv_direct_data_strided): dx(p, c) over (ki, kj, o)
 * ascending, the taps off the stride or outside the output left out; mismatched floats */
static int strided_dx_mismatches(const direct_case *d, const float *dx) {
    const conv_geom *g = &d->g;
    const int st = conv_stride(g);
    int bad = 0;
    for (int b = 0; b < g->batch; b++)
        for (int ih = 0; ih < g->in_h; ih++)
            for (int iw = 0; iw < g->in_w; iw++)
                for (int c = 0; c < g->in_c; c++, dx++) {
                    float a = 0.0f;
                    for (int ki = 0; ki < g->kh; ki++)
                        for (int kj = 0; kj < g->kw; kj++) {
                            const int nh = ih + g->pad - ki, nw = iw + g->pad - kj;
                            if (nh < 0 || nw < 0 || nh % st || nw % st || nh / st >= g->out_h ||
                                nw / st >= g->out_w)
                                continue;
                            for (int o = 0; o < d->oc; o++)
                                a = fmaf(dc_dy(d, b, nh / st, nw / st, o), dc_w(d, o, ki, kj, c),
                                         a);
                        }
                    bad += memcmp(dx, &a, sizeof a) != 0;
                }
    return bad;
}

/* stride > 1: the forward pass and the filter and bias gradients (conv_direct_supports_strided),
 * and with in_c % 16 == 0 the data gradient on 1 and 3 threads (conv_direct_data_strided) */
static void check_direct_strided(conv_direct_isa isa, int batch, int h, int w, int c, int oc, int k,
                                 int pad, int stride) {
    conv_direct_cap_isa(isa);
    conv_geom g = {
        batch, h, w,   c,     (h + 2 * pad - k) / stride + 1, (w + 2 * pad - k) / stride + 1,
        k,     k, pad, stride};
    const int need_dx = stride == 1 && c % 16 == 0;
    CU_ASSERT_FATAL(stride > 1 ? conv_direct_supports_strided(&g, oc)
                               : conv_direct_supports(&g, oc, need_dx));
    const size_t nx = (size_t)batch * h * w * c, ny = (size_t)batch * g.out_h * g.out_w * oc;
    const size_t nw = (size_t)oc * k * k * c;
    float *x = ss_malloc(nx * sizeof(float)), *dx = ss_malloc(nx * sizeof(float));
    float *wt = ss_malloc(nw * sizeof(float)), *dw = ss_malloc(nw * sizeof(float));
    float *bias = ss_malloc((size_t)oc * sizeof(float)), *y = ss_malloc(ny * sizeof(float));
    float *dy = ss_malloc(ny * sizeof(float)), *db = ss_malloc((size_t)oc * sizeof(float));
    float *ws = ss_malloc(conv_direct_workspace_floats(&g, oc) * sizeof(float));
    rng r;
    rng_seed(&r, (uint64_t)(h * 1000 + oc * 10 + pad), RNG_STREAM_DATA);
    fill_uniform(&r, x, nx, -1, 1);
    fill_uniform(&r, wt, nw, -0.5f, 0.5f);
    fill_uniform(&r, bias, (size_t)oc, -0.2f, 0.2f);
    fill_uniform(&r, dy, ny, -1, 1);
    direct_case d = {g, oc, x, wt, bias, dy};
    int bad = 0;
    for (int relu = 0; relu < 2; relu++) {
        conv_direct_forward(&g, oc, x, wt, bias, relu, ws, y, NULL, 1);
        conv_direct_backward(&g, oc, x, dy, wt, ws, dw, db, need_dx ? dx : NULL, NULL, 1);
        bad += direct_mismatches(&d, y, relu, dw, need_dx ? dx : NULL);
        bad += bias_mismatches(&d, db);
    }
    if (stride > 1 && c % 16 == 0) {
        CU_ASSERT(conv_direct_supports_strided_dx(&g, oc));
        for (int threads = 1; threads <= 3; threads += 2) {
            memset(dx, 0xff, nx * sizeof(float)); /* NaNs: every element must be written */
            conv_direct_data_strided(&g, oc, dy, wt, dx, threads);
            bad += strided_dx_mismatches(&d, dx);
        }
    } else if (stride > 1) {
        CU_ASSERT(!conv_direct_supports_strided_dx(&g, oc));
    }
    if (bad)
        fprintf(stderr,
                "\n  direct conv (isa %d) B%d %dx%dx%d -> %d k %d pad %d stride %d: %d mismatches",
                (int)isa, batch, h, w, c, oc, k, pad, stride, bad);
    CU_ASSERT_EQUAL(bad, 0);
    free(x), free(dx), free(wt), free(dw), free(bias), free(y), free(dy), free(db), free(ws);
}

static void check_direct_case(conv_direct_isa isa, int batch, int h, int w, int c, int oc, int k,
                              int pad) {
    check_direct_strided(isa, batch, h, w, c, oc, k, pad, 1);
}

/* every instruction set this CPU has, each against the same references */
static void test_conv_direct_exact(void) {
    const conv_direct_isa best = conv_direct_best_isa();
    if (best == CONV_DIRECT_NONE) SS_SKIP("no AVX2 or AVX-512F: direct convolution unused");
    for (conv_direct_isa isa = CONV_DIRECT_AVX2; isa <= best; isa++) {
        check_direct_case(isa, 2, 14, 14, 32, 64, 5, 2); /* the cnn's conv2 */
        check_direct_case(isa, 2, 28, 28, 1, 32, 5, 2);  /* the cnn's conv1 (no data gradient) */
        check_direct_case(isa, 3, 7, 9, 16, 48, 3, 1);
        check_direct_case(isa, 2, 6, 5, 32, 16, 3, 0);
        check_direct_case(isa, 1, 5, 11, 16, 80, 5, 4);
        check_direct_case(isa, 2, 4, 17, 3, 16, 1, 0); /* 1x1, 17 = 14 + 3 pixels a row */
        /* maps under 8 x 8 go in groups of samples (conv_direct.c, group_samples): vgg:11's
         * 7 x 7, 3 x 3 and 1 x 1 maps, groups of 14 and a remainder, 14 = 6 + 6 + 2 samples in
         * AVX2 tiles, output channels 64 + 16 (filter tiles of 4 and 1 vectors) */
        check_direct_case(isa, 6, 7, 7, 16, 32, 3, 1);
        check_direct_case(isa, 17, 3, 3, 32, 80, 3, 1);
        check_direct_case(isa, 16, 1, 1, 48, 16, 3, 1);
        /* 1 x 1 maps read the kernel's centre alone (conv_direct.c, centre_only): the chains of a
         * 1 x 1 kernel, every other tap's filter gradient +0 */
        check_direct_case(isa, 20, 1, 1, 32, 64, 5, 2);
        check_direct_case(isa, 15, 2, 3, 1, 64, 3, 1); /* one input channel, no data gradient */
        /* 512 KiB of x and dy a sample: filter chunks of one sample (conv_direct.c,
         * filter_chunk); a 1 x 1 kernel keeps the references short */
        check_direct_case(isa, 2, 2, 2, 32768, 16, 1, 0);
        /* full tiles of 14 pixels at the pixel strides the AVX-512 tiles take as constants
         * (conv_direct_tiles.c, slide_px_512), one vector and two: forward 128 and 64, data
         * gradient 48 (not one of them), 16 and 32 */
        check_direct_case(isa, 1, 3, 14, 128, 48, 3, 1);
        check_direct_case(isa, 1, 2, 14, 64, 16, 3, 1);
        check_direct_case(isa, 2, 3, 14, 16, 32, 3, 1);
        /* stride 2 (conv_direct_supports_strided: forward and filter gradient): resnet:20's
         * 28 x 28 x 16 -> 14 x 14 x 32 and 14 x 14 x 32 -> 7 x 7 x 64 (7 x 7 maps without the
         * frame skipped), odd sizes, a 1 x 1 kernel, and stride 3 */
        check_direct_strided(isa, 2, 28, 28, 16, 32, 3, 1, 2);
        check_direct_strided(isa, 3, 14, 14, 32, 64, 3, 1, 2);
        check_direct_strided(isa, 2, 9, 11, 8, 48, 3, 1, 2);
        check_direct_strided(isa, 2, 8, 8, 16, 16, 1, 0, 2);
        check_direct_strided(isa, 1, 13, 16, 4, 32, 5, 2, 3);
        /* the data gradient's runs and tiles: 48 channels (a 2- and a 1-vector block on
         * AVX-512), 33 columns (17 and 16 pixels a residue: a full tile and a partial one), a
         * stride of 3, a 1 x 1 kernel, an even kernel */
        check_direct_strided(isa, 2, 9, 33, 48, 16, 3, 1, 2);
        check_direct_strided(isa, 2, 11, 40, 16, 32, 5, 2, 3);
        check_direct_strided(isa, 3, 7, 7, 32, 16, 1, 0, 2);
        check_direct_strided(isa, 2, 10, 12, 16, 16, 4, 1, 2);
    }
    const conv_geom g3 = {17, 3, 3, 32, 3, 3, 3, 3, 1, 1},
                    g14 = {2, 14, 14, 32, 14, 14, 5, 5, 2, 1};
    CU_ASSERT(conv_direct_skips_frame(&g3));
    CU_ASSERT(!conv_direct_skips_frame(&g14));
    conv_direct_cap_isa(CONV_DIRECT_AVX512);
}

/* The frame's rows are left out on every map, not only added as zeros: with the kernel's first
 * row infinite, the forward pass's first output row and the data gradient's last input row stay
 * finite (a term of 0 x inf would make them NaN), the rows beside them are not (infinite, NaN at
 * the edge pixels, whose frame columns stay in); with the output gradient's first row infinite,
 * the filter gradient of the kernel's first row stays finite. A 14 x 14 map (tiles of pixels
 * along rows), stride 1 and 2, on every instruction set. */
static void test_conv_direct_frame_rows(void) {
    const conv_direct_isa best = conv_direct_best_isa();
    if (best == CONV_DIRECT_NONE) SS_SKIP("no AVX2 or AVX-512F: direct convolution unused");
    const int c = 16, oc = 16, k = 3;
    for (conv_direct_isa isa = CONV_DIRECT_AVX2; isa <= best; isa++)
        for (int st = 1; st <= 2; st++) {
            conv_direct_cap_isa(isa);
            const int oh_n = (14 + 2 - k) / st + 1;
            const conv_geom g = {2, 14, 14, c, oh_n, oh_n, k, k, 1, st};
            const size_t nx = (size_t)2 * 14 * 14 * c, ny = (size_t)2 * oh_n * oh_n * oc;
            const size_t nw = (size_t)oc * k * k * c;
            float *x = malloc(nx * sizeof(float)), *dx = malloc(nx * sizeof(float));
            float *y = malloc(ny * sizeof(float)), *dy = malloc(ny * sizeof(float));
            float *w = malloc(nw * sizeof(float)), *dw = malloc(nw * sizeof(float));
            float *bias = calloc((size_t)oc, sizeof(float)), *db = malloc(oc * sizeof(float));
            float *ws = malloc(conv_direct_workspace_floats(&g, oc) * sizeof(float));
            rng r;
            rng_seed(&r, 31, RNG_STREAM_DATA);
            fill_uniform(&r, x, nx, 0.5f, 1.0f);
            fill_uniform(&r, dy, ny, 0.5f, 1.0f);
            fill_uniform(&r, w, nw, 0.5f, 1.0f);
            for (int o = 0; o < oc; o++) /* the kernel's first row: (o, 0, kj, c) */
                for (int t = 0; t < k * c; t++)
                    w[(size_t)o * k * k * c + t] = INFINITY;
            conv_direct_forward(&g, oc, x, w, bias, 0, ws, y, NULL, 1);
            int first_finite = 1, second_inf = 1;
            for (int b = 0; b < 2; b++)
                for (int i = 0; i < oh_n * oc; i++) {
                    first_finite &= isfinite(y[(size_t)b * oh_n * oh_n * oc + i]);
                    second_inf &= !isfinite(y[((size_t)b * oh_n + 1) * oh_n * oc + i]);
                }
            CU_ASSERT(first_finite && second_inf);
            if (st == 1) { /* the data gradient's last input row reads past the output's last */
                conv_direct_backward(&g, oc, x, dy, w, ws, dw, db, dx, NULL, 1);
                int last_finite = 1, before_inf = 1;
                for (int b = 0; b < 2; b++)
                    for (int i = 0; i < 14 * c; i++) {
                        last_finite &= isfinite(dx[((size_t)b * 14 + 13) * 14 * c + i]);
                        before_inf &= !isfinite(dx[((size_t)b * 14 + 12) * 14 * c + i]);
                    }
                CU_ASSERT(last_finite && before_inf);
            }
            fill_uniform(&r, w, nw, 0.5f, 1.0f);
            for (int b = 0; b < 2; b++) /* the output gradient's first row */
                for (int i = 0; i < oh_n * oc; i++)
                    dy[(size_t)b * oh_n * oh_n * oc + i] = INFINITY;
            conv_direct_backward(&g, oc, x, dy, w, ws, dw, db, NULL, NULL, 1);
            int row0_finite = 1, row1_inf = 1;
            for (int o = 0; o < oc; o++)
                for (int t = 0; t < k * c; t++) {
                    row0_finite &= isfinite(dw[(size_t)o * k * k * c + t]);
                    row1_inf &= !isfinite(dw[(size_t)o * k * k * c + k * c + t]);
                }
            CU_ASSERT(row0_finite && row1_inf);
            free(x), free(dx), free(y), free(dy), free(w), free(dw), free(bias), free(db), free(ws);
        }
    conv_direct_cap_isa(CONV_DIRECT_AVX512);
}

static double worst_relative(const float *a, const float *ref, size_t n) {
    const double scale = rms(ref, n);
    double worst = 0.0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(a[i] - ref[i]) / (1e-5 * (fabs(ref[i]) + scale)));
    return worst;
}

/* Threads split the batch into ranges: outputs and data gradients the same bits as one thread;
 * filter and bias gradients the ranges' sums (float rounding of a reordered sum: 1e-5 relative),
 * and the same bits from one run to the next. 5 samples: ranges of 1 and 2, or 2 and 3. Wide
 * layers also split the packing of the weights (blocks of channels) and the sum of the ranges'
 * filter gradients (rows of it) over the threads. Where the filter gradient is split by rows
 * instead (conv_direct_filter_by_rows), it is the same bits as one thread's. */
static void check_direct_threads(int batch, int h, int w, int c, int oc) {
    conv_geom g = {batch, h, w, c, h, w, 3, 3, 1, 1};
    const size_t nx = (size_t)batch * h * w * c, ny = (size_t)batch * h * w * oc;
    const size_t nw = (size_t)oc * 9 * c;
    float *x = ss_malloc(nx * sizeof(float)), *dy = ss_malloc(ny * sizeof(float));
    float *wt = ss_malloc(nw * sizeof(float)), *bias = ss_malloc(oc * sizeof(float));
    float *ws = ss_malloc(conv_direct_workspace_floats(&g, oc) * sizeof(float));
    float *y[4], *dx[4], *dw[4], *db[4];
    rng r;
    rng_seed(&r, 21, RNG_STREAM_DATA);
    fill_uniform(&r, x, nx, -1, 1);
    fill_uniform(&r, dy, ny, -1, 1);
    fill_uniform(&r, wt, nw, -0.5f, 0.5f);
    fill_uniform(&r, bias, oc, -0.2f, 0.2f);
    static const int threads[4] = {1, 2, 3, 3};
    for (int i = 0; i < 4; i++) {
        y[i] = ss_malloc(ny * sizeof(float)), dx[i] = ss_malloc(nx * sizeof(float));
        dw[i] = ss_malloc(nw * sizeof(float)), db[i] = ss_malloc(oc * sizeof(float));
        conv_direct_forward(&g, oc, x, wt, bias, 1, ws, y[i], NULL, threads[i]);
        conv_direct_backward(&g, oc, x, dy, wt, ws, dw[i], db[i], dx[i], NULL, threads[i]);
    }
    for (int i = 1; i < 4; i++) {
        CU_ASSERT(memcmp(y[0], y[i], ny * sizeof(float)) == 0);
        CU_ASSERT(memcmp(dx[0], dx[i], nx * sizeof(float)) == 0);
        CU_ASSERT(worst_relative(dw[i], dw[0], nw) <= 1);
        if (conv_direct_filter_by_rows(&g, oc, threads[i], 0))
            CU_ASSERT(memcmp(dw[0], dw[i], nw * sizeof(float)) == 0);
        CU_ASSERT(worst_relative(db[i], db[0], (size_t)oc) <= 1);
    }
    CU_ASSERT(memcmp(dw[2], dw[3], nw * sizeof(float)) == 0); /* 3 threads, twice */
    CU_ASSERT(memcmp(db[2], db[3], oc * sizeof(float)) == 0);
    /* on n threads the filter and bias gradients are the n sample ranges' (contiguous, as
     * cpu_par_for splits 5 samples), each a one-thread pass over its samples, added in range
     * order: the bits */
    float *part_dw = ss_malloc(nw * sizeof(float)), *part_db = ss_malloc(oc * sizeof(float));
    float *sum_dw = ss_malloc(nw * sizeof(float)), *sum_db = ss_malloc(oc * sizeof(float));
    float *part_dx = ss_malloc(nx * sizeof(float));
    for (int i = 1; i < 3; i++) {
        const int n = threads[i];
        if (conv_direct_filter_by_rows(&g, oc, n, 0)) continue; /* checked above */
        for (int t = 0; t < n; t++) {
            const int b0 = batch * t / n, b1 = batch * (t + 1) / n;
            conv_geom gt = g;
            gt.batch = b1 - b0;
            conv_direct_backward(&gt, oc, x + (size_t)b0 * h * w * c, dy + (size_t)b0 * h * w * oc,
                                 wt, ws, t ? part_dw : sum_dw, t ? part_db : sum_db, part_dx, NULL,
                                 1);
            for (size_t k = 0; t && k < nw; k++)
                sum_dw[k] += part_dw[k];
            for (int o = 0; t && o < oc; o++)
                sum_db[o] += part_db[o];
        }
        CU_ASSERT(memcmp(sum_dw, dw[i], nw * sizeof(float)) == 0);
        CU_ASSERT(memcmp(sum_db, db[i], oc * sizeof(float)) == 0);
    }
    free(part_dw), free(part_db), free(sum_dw), free(sum_db), free(part_dx);
    for (int i = 0; i < 4; i++)
        free(y[i]), free(dx[i]), free(dw[i]), free(db[i]);
    free(x), free(dy), free(wt), free(bias), free(ws);
}

/* a 7 x 9 map in groups of 4 samples, a 3 x 3 one in groups of 14 (frame left out), a 1 x 1 one;
 * filter gradients by rows on 3 x 3 maps of 64 and 512 channels */
static void test_conv_direct_threads(void) {
    if (!conv_direct_available()) SS_SKIP("no AVX2 or AVX-512F: direct convolution unused");
    check_direct_threads(5, 7, 9, 16, 48);
    check_direct_threads(5, 3, 3, 16, 48);
    check_direct_threads(5, 1, 1, 16,
                         48); /* the kernel's centre alone (conv_direct.c, centre_only) */
    /* 16 weight blocks, 576 filter-gradient rows: the sums split; the filter gradient by rows */
    check_direct_threads(5, 3, 3, 64, 512);
    CU_ASSERT(conv_direct_filter_by_rows(&(conv_geom){5, 3, 3, 64, 3, 3, 3, 3, 1, 1}, 512, 2, 0));
    /* vgg:11's stage 4 (3 x 3 x 512): by rows, the batch in two chunks of samples (28 and 2) */
    check_direct_threads(30, 3, 3, 512, 512);
    CU_ASSERT(conv_direct_filter_by_rows(&(conv_geom){30, 3, 3, 512, 3, 3, 3, 3, 1, 1}, 512, 3, 0));
    /* 7 x 7 maps of 16 channels: by samples */
    CU_ASSERT(!conv_direct_filter_by_rows(&(conv_geom){5, 7, 9, 16, 7, 9, 3, 3, 1, 1}, 48, 2, 0));
}

/* The layers choose the direct path where the CPU has it and the channels suit it; otherwise,
 * and when asked to, im2col + SGEMM. Both compute the same convolution: outputs and gradients
 * agree within float rounding of 800-term sums (bound as in test_conv_chunks). */
static void run_conv_layer(device *dev, layer *l, int im2col_only, int batch, const float *x,
                           const float *dy, const float *params, float *y, float *dx,
                           float *grads) {
    size_t np = l->weight_count + l->bias_count;
    float *p = device_alloc(dev, np), *g = device_alloc(dev, np);
    memcpy(p, params, np * sizeof(float));
    layer_bind(l, p, g, 0);
    l->conv_im2col_only = im2col_only;
    layer_alloc_scratch(dev, l, batch);
    layer_forward(dev, l, batch, x, y);
    layer_backward(dev, l, batch, x, y, dy, dx);
    memcpy(grads, g, np * sizeof(float));
    layer_free_scratch(dev, l);
    device_free(dev, p);
    device_free(dev, g);
}

static void test_conv_direct_vs_im2col(void) {
    device *dev = open_cpu();
    layer l[2];
    const int batch = 3;
    for (int i = 0; i < 2; i++) {
        layer_init_conv2d(&l[i], "conv", 14, 14, 32, 64, 5, 2);
        l[i].relu_in_epilogue = 1; /* as fused before a ReLU and a max-pool */
    }
    const size_t nx = batch * layer_in_size(&l[0]), ny = batch * layer_out_size(&l[0]);
    const size_t np = l[0].weight_count + l[0].bias_count;
    float *x = ss_malloc(nx * sizeof(float)), *dy = ss_malloc(ny * sizeof(float));
    float *params = ss_malloc(np * sizeof(float)), *y[2], *dx[2], *grads[2];
    rng r;
    rng_seed(&r, 5, RNG_STREAM_DATA);
    fill_uniform(&r, x, nx, -1, 1);
    fill_uniform(&r, dy, ny, -1, 1);
    fill_uniform(&r, params, np, -0.1f, 0.1f);
    for (int i = 0; i < 2; i++) {
        y[i] = ss_malloc(ny * sizeof(float));
        dx[i] = ss_malloc(nx * sizeof(float));
        grads[i] = ss_malloc(np * sizeof(float));
        run_conv_layer(dev, &l[i], i, batch, x, dy, params, y[i], dx[i], grads[i]);
    }
    CU_ASSERT_EQUAL(l[0].conv_direct, conv_direct_available());
    CU_ASSERT_EQUAL(l[1].conv_direct, 0);
    double worst = fmax(worst_relative(y[0], y[1], ny), worst_relative(dx[0], dx[1], nx));
    worst = fmax(worst, worst_relative(grads[0], grads[1], np));
    fprintf(stderr, "\n  direct vs im2col: largest difference %.3g x the bound", worst);
    CU_ASSERT(worst <= 1);
    for (int i = 0; i < 2; i++)
        free(y[i]), free(dx[i]), free(grads[i]);
    free(x), free(dy), free(params);
    device_close(dev);
}

/* The direct conv -> ReLU -> max-pool block (layer_conv_pool_*) against the same layers one after
 * the other (mode 0: ReLU and pooling separate; 1: ReLU fused, layers called one by one; 2: the
 * block): the same bits. 7 rows: the pooling drops the last one, whose gradient is 0. */
enum { BLK_B = 3, BLK_H = 7, BLK_W = 6, BLK_C = 16, BLK_OC = 32 };

static void run_conv_block(device *dev, int mode, const float *x, const float *dy3,
                           const float *params, size_t np, float *y3, float *dx, float *grads) {
    layer l[3];
    layer_init_conv2d(&l[0], "conv", BLK_H, BLK_W, BLK_C, BLK_OC, 3, 1);
    layer_init_relu(&l[1], "relu", BLK_H, BLK_W, BLK_OC);
    layer_init_maxpool2(&l[2], "pool", BLK_H, BLK_W, BLK_OC);
    if (mode > 0) layer_fuse_relu(l, 3);
    float *p = device_alloc(dev, np), *g = device_alloc(dev, np);
    memcpy(p, params, np * sizeof(float));
    layer_bind(&l[0], p, g, 0);
    layer_alloc_scratch(dev, &l[0], BLK_B);
    CU_ASSERT(l[0].conv_direct && l[0].pool_fused == (mode > 0));
    const size_t n1 = (size_t)BLK_B * BLK_H * BLK_W * BLK_OC;
    float *a1 = device_alloc(dev, n1), *a2 = mode ? a1 : device_alloc(dev, n1);
    float *d1 = device_alloc(dev, n1), *d2 = mode ? d1 : device_alloc(dev, n1);
    if (mode == 2) {
        layer_conv_pool_forward(dev, &l[0], BLK_B, x, a1, y3);
        layer_conv_pool_backward(dev, &l[0], BLK_B, x, a1, dy3, dx);
    } else {
        layer_forward(dev, &l[0], BLK_B, x, a1);
        layer_forward(dev, &l[1], BLK_B, a1, a2);
        layer_forward(dev, &l[2], BLK_B, a2, y3);
        layer_backward(dev, &l[2], BLK_B, a2, y3, dy3, d2);
        layer_backward(dev, &l[1], BLK_B, a1, a2, d2, d1);
        layer_backward(dev, &l[0], BLK_B, x, a1, d1, dx);
    }
    memcpy(grads, g, np * sizeof(float));
    layer_free_scratch(dev, &l[0]);
    if (!mode) device_free(dev, a2), device_free(dev, d2);
    device_free(dev, a1), device_free(dev, d1), device_free(dev, p), device_free(dev, g);
}

static void test_conv_block(void) {
    if (!conv_direct_available()) SS_SKIP("no AVX2 or AVX-512F: no direct convolution block");
    device *dev = open_cpu();
    const size_t nx = (size_t)BLK_B * BLK_H * BLK_W * BLK_C;
    const size_t ny = (size_t)BLK_B * (BLK_H / 2) * (BLK_W / 2) * BLK_OC;
    const size_t np = (size_t)BLK_OC * 9 * BLK_C + BLK_OC;
    float *x = ss_malloc(nx * sizeof(float)), *dy = ss_malloc(ny * sizeof(float));
    float *params = ss_malloc(np * sizeof(float)), *y[3], *dx[3], *grads[3];
    rng r;
    rng_seed(&r, 13, RNG_STREAM_DATA);
    fill_uniform(&r, x, nx, -1, 1);
    fill_uniform(&r, dy, ny, -1, 1);
    fill_uniform(&r, params, np, -0.3f, 0.3f);
    conv_winograd_enable(0); /* the layers apart on the direct passes, as the block */
    for (int mode = 0; mode < 3; mode++) {
        y[mode] = ss_malloc(ny * sizeof(float));
        dx[mode] = ss_malloc(nx * sizeof(float));
        grads[mode] = ss_malloc(np * sizeof(float));
        run_conv_block(dev, mode, x, dy, params, np, y[mode], dx[mode], grads[mode]);
    }
    int zeros = 0;
    for (size_t i = 0; i < ny; i++)
        zeros += y[0][i] == 0.0f;
    CU_ASSERT(zeros > 0); /* some windows are all 0: the ReLU's mask matters */
    /* on threads the layers apart may split the filter gradient by rows (one thread's bits),
     * where the block, which forms each sample's output gradient as it goes, sums ranges of
     * samples: then the block's filter gradient is within the ranges' rounding */
    const conv_geom g = {BLK_B, BLK_H, BLK_W, BLK_C, BLK_H, BLK_W, 3, 3, 1, 1};
    const int by_rows = conv_direct_filter_by_rows(&g, BLK_OC, cpu_par_threads(), 0);
    for (int mode = 1; mode < 3; mode++) {
        CU_ASSERT(memcmp(y[0], y[mode], ny * sizeof(float)) == 0);
        CU_ASSERT(memcmp(dx[0], dx[mode], nx * sizeof(float)) == 0);
        if (mode == 2 && by_rows) {
            CU_ASSERT(worst_relative(grads[mode], grads[0], np) <= 1);
            CU_ASSERT(memcmp(grads[0] + np - BLK_OC, grads[mode] + np - BLK_OC,
                             BLK_OC * sizeof(float)) == 0); /* the bias: ranges in both */
        } else {
            CU_ASSERT(memcmp(grads[0], grads[mode], np * sizeof(float)) == 0);
        }
    }
    conv_winograd_enable(1);
    for (int mode = 0; mode < 3; mode++)
        free(y[mode]), free(dx[mode]), free(grads[mode]);
    free(x), free(dy), free(params);
    device_close(dev);
}

#ifdef SS_HAVE_CUDA
#include "kernels/cuda_blas.h"

/* cuBLAS, loaded rather than linked (kernels/cuda_blas.c): every function the CUDA device calls
 * resolves from the installed library, GPU or none; a handle is made where a GPU is, and refused
 * with a status (not a crash) where none is. */
static void test_cuda_blas_loads(void) {
    char reason[256] = "";
    const cuda_blas_api *b = cuda_blas(reason, sizeof reason);
    if (!b) fprintf(stderr, "\n  %s\n", reason);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT(b->create && b->destroy && b->set_stream && b->sgemm && b->sgemm_strided_batched &&
              b->status_string);
    CU_ASSERT_PTR_EQUAL(cuda_blas(NULL, 0), b); /* once */
    /* cuBLAS's own message, not the fallback's number */
    CU_ASSERT_PTR_NOT_NULL(strstr(cuda_blas_status(CUBLAS_STATUS_NOT_INITIALIZED), "initialized"));
    cublasHandle_t h = NULL;
    const cublasStatus_t st = b->create(&h);
    if (st == CUBLAS_STATUS_SUCCESS) {
        CU_ASSERT_EQUAL(b->destroy(h), CUBLAS_STATUS_SUCCESS);
    } else {
        CU_ASSERT(strlen(cuda_blas_status(st)) > 0);
    }
}
#endif

static CU_TestInfo layer_tests[] = {
    {"layer_backward dense vs finite differences", test_grad_dense},
    {"layer_backward conv2d vs finite differences", test_grad_conv2d},
    {"layer_backward maxpool2 vs finite differences", test_grad_maxpool},
    {"layer_backward relu vs finite differences", test_grad_relu},
    {"layer_backward flatten vs finite differences", test_grad_flatten},
    {"layer_backward strided, bias-free conv2d vs finite differences", test_grad_conv2d_strided},
    {"layer_backward batchnorm (training) vs finite differences", test_grad_batchnorm},
    {"layer_backward global avgpool vs finite differences", test_grad_avgpool},
    {"softmax_xent loss and gradient", test_grad_softmax_xent},
    {"conv2d batch in chunks = per-sample passes", test_conv_chunks},
    {"im2col and col2im = direct definitions, bit for bit", test_im2col_col2im},
    {"direct convolution = fmaf chains, bit for bit", test_conv_direct_exact},
    {"direct convolution: the frame's rows left out of the chains", test_conv_direct_frame_rows},
    {"direct convolution on threads = one thread", test_conv_direct_threads},
    {"direct convolution = im2col + sgemm within rounding", test_conv_direct_vs_im2col},
    {"direct conv -> ReLU -> max-pool block = separate layers, bit for bit", test_conv_block},
    {"conv -> ReLU -> max-pool fused = separate layers, bit for bit", test_fused_relu},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo model_tests[] = {
    {"model_forward_backward logreg vs finite differences", test_grad_logreg},
    {"model_forward_backward mlp vs finite differences", test_grad_mlp},
    {"model_forward_backward cnn vs finite differences", test_grad_cnn},
    {"model_forward_backward cnn:C1,C2,D1,... and cnn:lenet vs finite differences",
     test_grad_cnn_widths},
    {"model_forward_backward resnet:8 (options A, B) vs finite differences", test_grad_resnet},
    {"model_forward_backward vgg:11 (narrow) vs finite differences", test_grad_vgg},
    {"ReLUs fused into batch norm and add: the same bits as the layers apart",
     test_fused_relu_bits},
    {"parameter counts: ResNet-20 0.27M (A 269722, B 272474), LeNet-5 62006, VGG-11/13/16",
     test_param_counts},
    {"model_*_flops_per_sample resnet closed form, per-layer costs add up", test_flops_resnet},
    {"batchnorm running statistics (PyTorch's) and inference mode", test_batchnorm_running_stats},
    {"batchnorm sums: the bits of a scalar loop at every width", test_batchnorm_sums_bits},
    {"model_*_flops_per_sample mlp closed form", test_flops_mlp},
    {"model_*_flops_per_sample cnn closed form", test_flops_cnn},
    {"model views, He init, model_layer_norms", test_model_views},
    {"model_spec_parse", test_model_spec_parse},
    {"device_open fallback and errors", test_device_open},
    {"model_forward_backward_each: a hook per layer, once its gradient is final", test_grad_hooks},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo optim_tests[] = {
    {"sgd_step momentum and weight decay by hand", test_sgd_momentum_wd},
    {"lr_schedule_parse and lr_schedule_at", test_lr_schedules},
    {"device vector ops vs references", test_vector_ops},
#ifdef SS_HAVE_CUDA
    {"cuBLAS loads on demand: every function the CUDA device calls", test_cuda_blas_loads},
#endif
    CU_TEST_INFO_NULL,
};

static CU_TestInfo training_tests[] = {
    {"training is bit-identical for one seed", test_determinism},
    {"loss decreases on a learnable problem", test_loss_decreases},
    CU_TEST_INFO_NULL,
};

int main(void) {
    CU_SuiteInfo suites[] = {
        {"layers", NULL, NULL, NULL, NULL, layer_tests},
        {"models", NULL, NULL, NULL, NULL, model_tests},
        {"optim", NULL, NULL, NULL, NULL, optim_tests},
        {"training", NULL, NULL, NULL, NULL, training_tests},
        CU_SUITE_INFO_NULL,
    };
    return ss_test_main(suites);
}

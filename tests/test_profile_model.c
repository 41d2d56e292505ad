/* syncsim profile model (emu/profile_model.h): the profile of an emulated model, replayed on one
 * worker with the compute model, gives the step that the emulation itself charges for that model
 * and batch, on the same GPU, precision and framework.
 *
 * For each model (mlp, cnn, resnet:8 with projection shortcuts, vgg:11, a small gpt on a text set
 * written here), the built syncsim writes the profile (`profile model`) and replays it on one
 * worker (`replay --profile FILE --workers 1 --record`); in a child process the emulation runs
 * one BSP step of the same model on one worker (real tensors, compute jitter off) and the
 * compute seconds of the two records are compared (relative 1e-12: the same arithmetic on the
 * same numbers). The profile's parameters and FLOPs are the model's, and a layer given the wrong
 * kind changes the predicted step (the comparison would catch a wrong mapping). */
#include "ss_test.h"

#include "common/isolate.h"
#include "common/status.h"
#include "emu/emulation.h"
#include "emu/profile_model.h"
#include "sim/net/cluster.h"
#include "sim/platform/platform_gen.h"
#include "sim/policy/policy.h"
#include "sim/simulate.h"
#include "traces/profile.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#define SYNCSIM SS_BINARY_DIR "/syncsim"

typedef struct pm_case {
    const char *model;
    const char *dataset;  /* as the CLI takes it */
    int c, h, w, classes; /* its shape (an image set; 0: the text set written by text_dir) */
    int batch;
    platform_gpu gpu;
    sim_precision precision;
    sim_framework framework;
} pm_case;

/* What the emulation's child returns. */
typedef struct pm_outcome {
    double compute_s; /* step 1 of worker 0 */
    double params, fwd_flops, bwd_flops;
    int n_layers;
} pm_outcome;

/* A small WikiText-2 layout (wiki.{train,valid,test}.tokens) under /tmp: the CLI and the child
 * read the same vocabulary from it. */
static const char *text_dir(void) {
    static char dir[128];
    if (dir[0]) return dir;
    snprintf(dir, sizeof dir, "/tmp/ss_test_profile_model_%d", (int)getpid());
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    SS_ASSERT(system(cmd) == 0);
    const char *files[3] = {"wiki.train.tokens", "wiki.valid.tokens", "wiki.test.tokens"};
    for (int f = 0; f < 3; f++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, files[f]);
        FILE *fp = fopen(path, "w");
        SS_ASSERT(fp != NULL);
        unsigned x = 12345u + (unsigned)f;
        for (int line = 0; line < (f == 0 ? 60 : 12); line++) {
            for (int k = 0; k < 12; k++) {
                x = x * 1103515245u + 12345u;
                fprintf(fp, "%sw%u", k ? " " : "", (x >> 16) % 97);
            }
            fputc('\n', fp);
        }
        fclose(fp);
    }
    return dir;
}

static void load_data(const pm_case *c, const model_spec *spec, dataset *train, dataset *test) {
    if (c->c == 0) {
        SS_ASSERT(dataset_text_load(c->dataset, text_dir(), train, test) == SS_OK);
        SS_ASSERT(dataset_fit_model(train, test, spec) == SS_OK);
        return;
    }
    synthetic_spec s;
    synthetic_spec_default(&s);
    s.n_train = 64;
    s.n_test = 4;
    s.classes = c->classes;
    s.c = c->c, s.h = c->h, s.w = c->w;
    SS_ASSERT(dataset_synthetic(&s, 3, train, test) == SS_OK);
}

static void on_record(void *ctx, const step_record *r) {
    pm_outcome *o = ctx;
    if (r->step == 1 && r->worker == 0) o->compute_s = r->compute_s;
}

/* One emulated BSP step on one worker of the case's GPU, as train runs it under --compute
 * model (its precision and framework; jitter off). */
static int emulation_child(void *arg, isolate_blob *out) {
    const pm_case *c = arg;
    policy_config pc;
    policy_config_default(&pc);
    pc.kind = POLICY_BSP;
    pc.workers = 1;
    pc.steps = 1;
    pc.batch = c->batch;
    pc.seed = 1;
    pc.eval_every = 1;
    pc.compute = (sim_compute_cfg){.mode = SIM_COMPUTE_MODEL,
                                   .scale = 1.0,
                                   .precision = c->precision,
                                   .framework = c->framework};
    pc.compute_jitter = 0;
    char platform[64];
    snprintf(platform, sizeof platform, "/tmp/ss_test_profile_model_%d.xml", (int)getpid());
    platform_gen_spec ps = platform_gen_default();
    ps.n_hosts = 1;
    ps.gpu = c->gpu;
    int rc = platform_generate_file(&ps, platform);
    if (rc != SS_OK) return rc;
    sim_cluster_opts co = {.platform_path = platform, .n_workers = 1};
    sim_cluster *cluster;
    rc = sim_cluster_open(&co, &cluster);
    unlink(platform);
    if (rc != SS_OK) return rc;
    model_spec spec;
    int shape_c = c->c ? c->c : 1, shape_h = c->c ? c->h : 1, shape_w = c->c ? c->w : 1;
    int classes = c->classes;
    dataset train, test;
    if (!c->c) { /* a text set: its vocabulary first */
        SS_ASSERT(dataset_text_load(c->dataset, text_dir(), &train, &test) == SS_OK);
        classes = train.classes;
        dataset_free(&train);
        dataset_free(&test);
    }
    if ((rc = model_spec_parse(&spec, c->model, shape_c, shape_h, shape_w, classes)) != SS_OK)
        return rc;
    load_data(c, &spec, &train, &test);
    device *dev;
    if ((rc = device_open("cpu", &dev, NULL, 0)) != SS_OK) return rc;
    lr_schedule sched;
    lr_schedule_parse(&sched, "constant");
    sched.base_lr = 0.01;
    emulation_config ec = {.dev = dev,
                           .train = &train,
                           .test = &test,
                           .spec = &spec,
                           .seed = pc.seed,
                           .workers = 1,
                           .batch = pc.batch,
                           .max_batch = pc.batch,
                           .partition = PARTITION_DEFDP,
                           .partition_param = 1,
                           .schedule = sched,
                           .momentum = 0.9,
                           .eval_every = pc.steps,
                           .last_step = pc.steps};
    emulation *em;
    if ((rc = emulation_create(&ec, &em)) != SS_OK) return rc;
    pm_outcome o = {.compute_s = -1};
    policy_result res;
    if ((rc = sim_policy_run(&pc, cluster, emulation_source(em), on_record, &o, &res)) != SS_OK)
        return rc;
    model *m = emulation_replica(em, 0);
    o.params = (double)model_param_count(m);
    o.fwd_flops = model_forward_flops_per_sample(m);
    o.bwd_flops = model_backward_flops_per_sample(m);
    o.n_layers = model_cost_layer_count(m);
    isolate_blob_append(out, &o, sizeof o);
    return SS_OK;
}

/* compute_s of step 1 of worker 0 in a steps.trace */
static double trace_step1_compute(const char *path) {
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    char line[4096];
    double v = -1;
    while (fgets(line, sizeof line, fp)) {
        long step;
        int worker;
        double start, compute;
        if (line[0] == '#') continue;
        if (sscanf(line, "%ld %d %lf %lf", &step, &worker, &start, &compute) == 4 && step == 1 &&
            worker == 0)
            v = compute;
    }
    fclose(fp);
    return v;
}

/* Runs a shell command; on failure prints it and its output. Returns its exit code. */
static int run_or_say(const char *cmd) {
    char *text = NULL;
    int rc = ss_test_shell(cmd, &text);
    if (rc != 0) fprintf(stderr, "\n  %s\n  %s", cmd, text);
    free(text);
    return rc;
}

/* compute_s of step 1 of worker 0 in dir/steps.trace (a replay's --record) */
static double replayed_step1(const char *dir) {
    char trace_path[200];
    snprintf(trace_path, sizeof trace_path, "%s/steps.trace", dir);
    return trace_step1_compute(trace_path);
}

static void check_case(const pm_case *c) {
    char dir[128], prof[160], cmd[1024];
    snprintf(dir, sizeof dir, "/tmp/ss_test_profile_model_%d_run", (int)getpid());
    snprintf(prof, sizeof prof, "%s.profile", dir);
    /* the profile, by the CLI, at the case's batch */
    snprintf(cmd, sizeof cmd,
             SYNCSIM " profile model --model %s --dataset %s%s%s --batch %d --out %s 2>&1",
             c->model, c->dataset, c->c ? "" : " --data-dir ", c->c ? "" : text_dir(), c->batch,
             prof);
    CU_ASSERT_EQUAL_FATAL(run_or_say(cmd), 0);
    /* its replay on one worker of the same GPU (the profile's batch: the case's) */
    snprintf(cmd, sizeof cmd,
             SYNCSIM " replay --profile %s --workers 1 --steps 2 --policy bsp --gpu %s --compute "
                     "model --precision %s --framework %s --record --out %s 2>&1",
             prof, platform_gpu_name(c->gpu), sim_precision_name(c->precision),
             sim_framework_name(c->framework), dir);
    CU_ASSERT_EQUAL_FATAL(run_or_say(cmd), 0);
    const double replayed = replayed_step1(dir);
    /* the emulation's own step */
    isolate_blob blob = {0};
    if (isolate_call(emulation_child, (void *)c, &blob) != SS_OK) {
        fprintf(stderr, "\n  emulation failed: %s\n", ss_error_message());
        CU_FAIL_FATAL("emulation failed");
    }
    const pm_outcome *o = (const pm_outcome *)blob.data;
    printf("\n    %-14s batch %3d on %s (%s, %s): emulation %.9g s, replay of its profile %.9g s",
           c->model, c->batch, platform_gpu_name(c->gpu), sim_precision_name(c->precision),
           sim_framework_name(c->framework), o->compute_s, replayed);
    CU_ASSERT(o->compute_s > 0);
    SS_CHECK_CLOSE(replayed, o->compute_s, 0, 1e-12);

    /* the profile holds the model: parameters, FLOPs, layers */
    model_profile p;
    CU_ASSERT_EQUAL_FATAL(profile_load(prof, &p), SS_OK);
    CU_ASSERT_EQUAL(p.params, o->params);
    CU_ASSERT_EQUAL(p.layers, o->n_layers);
    CU_ASSERT_EQUAL(p.batch, c->batch);
    SS_CHECK_CLOSE(p.forward_flops_per_sample, o->fwd_flops, 0, 1e-12);
    SS_CHECK_CLOSE(p.backward_flops_per_sample, o->bwd_flops, 0, 1e-12);

    /* the same step from the profile's layers directly; with the layers' kinds lost (every
     * convolution, dense layer and normalization taken for an element-wise layer) it is another
     * step: the comparison above would catch a wrong mapping */
    sim_layer_cost *l = malloc(sizeof *l * (size_t)p.layers);
    CU_ASSERT_EQUAL_FATAL(profile_step_layers(&p, c->batch, l), SS_OK);
    const gpu_class *g;
    CU_ASSERT_EQUAL_FATAL(gpu_table_find("--gpu", platform_gpu_name(c->gpu), &g), SS_OK);
    sim_compute_cfg cc = {.mode = SIM_COMPUTE_MODEL,
                          .scale = 1.0,
                          .precision = c->precision,
                          .gpu = g,
                          .framework = c->framework};
    sim_compute_host host = {.gpu = g};
    double step = 0, wrong = 0;
    CU_ASSERT_EQUAL(sim_compute_step_s(&cc, &host, l, p.layers, &step), SS_OK);
    SS_CHECK_CLOSE(step, o->compute_s, 0, 1e-12);
    for (int i = 0; i < p.layers; i++)
        l[i].kind = SIM_LAYER_OTHER;
    CU_ASSERT_EQUAL(sim_compute_step_s(&cc, &host, l, p.layers, &wrong), SS_OK);
    printf(" (kinds lost: %+.2f %%)", 100 * (wrong / step - 1));
    CU_ASSERT(fabs(wrong - step) > 1e-3 * step);
    free(l);
    profile_free(&p);
    free(blob.data);
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", dir, prof);
    CU_ASSERT_EQUAL(system(cmd), 0);
}

static void test_mlp(void) {
    check_case(&(pm_case){"mlp", "fashion-mnist", 1, 28, 28, 10, 16, PLATFORM_GPU_V100,
                          SIM_PRECISION_FP32, SIM_FRAMEWORK_EAGER});
}

static void test_cnn(void) {
    check_case(&(pm_case){"cnn", "mnist", 1, 28, 28, 10, 8, PLATFORM_GPU_A100,
                          SIM_PRECISION_PYTORCH, SIM_FRAMEWORK_EAGER});
}

static void test_resnet(void) {
    check_case(&(pm_case){"resnet:8,proj", "cifar10", 3, 32, 32, 10, 8, PLATFORM_GPU_A100,
                          SIM_PRECISION_PYTORCH, SIM_FRAMEWORK_GRAPHS});
}

static void test_vgg(void) {
    check_case(&(pm_case){"vgg:11", "cifar100", 3, 32, 32, 100, 2, PLATFORM_GPU_H100,
                          SIM_PRECISION_BF16, SIM_FRAMEWORK_EAGER});
}

static void test_gpt(void) {
    check_case(&(pm_case){"gpt:2,32,2,8", "wikitext-2", 0, 0, 0, 0, 4, PLATFORM_GPU_A100,
                          SIM_PRECISION_FP16, SIM_FRAMEWORK_IDEAL});
}

/* --measure cpu: the same layers, FLOPs, bytes and kinds as the profile without it, each layer's
 * measured seconds (every convolution's passes timed, the layers inside the step, the gap the
 * rest), and a replay on one worker that charges the measured step a step; random data where
 * the set has no reader; a model too large for the memory refused up front. */
static void test_measured(void) {
    char base[128], plain[160], measured[160], dir[160], cmd[1024], *text = NULL;
    snprintf(base, sizeof base, "/tmp/ss_test_profile_model_%d_m", (int)getpid());
    snprintf(plain, sizeof plain, "%s0.profile", base);
    snprintf(measured, sizeof measured, "%s1.profile", base);
    snprintf(dir, sizeof dir, "%s_replay", base);
    snprintf(cmd, sizeof cmd,
             SYNCSIM " profile model --model cnn:4,8,16 --dataset synthetic --batch 8 --out %s "
                     "2>&1 && " SYNCSIM " profile model --model cnn:4,8,16 --dataset synthetic "
                     "--batch 8 --measure cpu --steps 10 --threads 1 --out %s 2>&1",
             plain, measured);
    int rc = ss_test_shell(cmd, &text);
    if (rc != 0) fprintf(stderr, "\n  %s\n  %s", cmd, text);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "measured on cpu: a step "));
    free(text);
    model_profile p0, p1;
    CU_ASSERT_EQUAL_FATAL(profile_load(plain, &p0), SS_OK);
    CU_ASSERT_EQUAL_FATAL(profile_load(measured, &p1), SS_OK);
    CU_ASSERT_EQUAL(p0.measured, 0);
    CU_ASSERT_EQUAL(p1.measured, 1);
    CU_ASSERT_EQUAL(p1.measured_batch, 8);
    CU_ASSERT_EQUAL(p1.measured_steps, 10);
    CU_ASSERT_STRING_EQUAL(p1.measured_device, "cpu");
    CU_ASSERT_EQUAL_FATAL(p1.layers, p0.layers);
    CU_ASSERT_EQUAL(p1.params, p0.params);
    double layers_s = 0.0;
    int convs = 0;
    for (int i = 0; i < p1.layers; i++) {
        const sim_layer_cost *a = &p0.layer_costs[i], *b = &p1.layer_costs[i];
        CU_ASSERT_STRING_EQUAL(p1.layer_names[i], p0.layer_names[i]);
        CU_ASSERT(a->fwd_flops == b->fwd_flops && a->bwd_flops == b->bwd_flops);
        CU_ASSERT(a->fwd_bytes == b->fwd_bytes && a->param_bytes == b->param_bytes);
        CU_ASSERT(a->kind == b->kind && a->kernels == b->kernels);
        CU_ASSERT(a->fwd_s == 0 && a->bwd_s == 0);
        CU_ASSERT(b->fwd_s >= 0 && b->bwd_s >= 0);
        if (b->kind == SIM_LAYER_CONV) { /* timed: a conv block counts in the conv's slot */
            convs++;
            CU_ASSERT(b->fwd_s > 0 && b->bwd_s > 0);
        }
        layers_s += b->fwd_s + b->bwd_s;
    }
    CU_ASSERT_EQUAL(convs, 2);
    CU_ASSERT(p1.measured_gap_s >= 0);
    /* the layers' seconds are per step of the batch, not per sample: they are nearly all of the
     * step (99 % here; the gap is SGD's update of 7,370 parameters and the code between
     * layers), at least half of it on a busy machine over 10 steps */
    CU_ASSERT(layers_s >= 0.5 * p1.measured_step_s);
    SS_CHECK_CLOSE(layers_s + p1.measured_gap_s, p1.measured_step_s, 0, 1e-9);
    /* the notes say how it was measured, and on what */
    snprintf(cmd, sizeof cmd,
             "grep -q -- '--measure cpu --steps 10 --threads 1' %s && grep -q 'trained on the "
             "first 8 training samples of synthetic' %s",
             measured, measured);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
    /* and by how much the layers were scaled: the step without the layer clock over the step
     * with it (the wall clock's reads cost the CPU nearly nothing, and the medians of 10 steps on
     * one thread keep a preempted step out: far from a quarter or four times, where a sum taken
     * for a mean would be ten times off; on two threads of a busy 2-core machine a pass waits
     * for a descheduled thread, and steps of 1 ms took 20 in whole runs, so the model's threads
     * are tested on the gpt case, without a bound on times) */
    snprintf(cmd, sizeof cmd, "grep -o 'scaled by [0-9.]* .*with it, [0-9.e-]* s' %s", measured);
    char *line = NULL;
    CU_ASSERT_EQUAL_FATAL(ss_test_shell(cmd, &line), 0);
    double scale = 0, clocked_s = 0;
    const char *with = strstr(line, "with it, ");
    CU_ASSERT_FATAL(sscanf(line, "scaled by %lf", &scale) == 1 && with &&
                    sscanf(with, "with it, %lf", &clocked_s) == 1);
    free(line);
    CU_ASSERT(scale > 0.25 && scale < 4.0);
    SS_CHECK_CLOSE(scale, p1.measured_step_s / clocked_s, 1e-4, 1e-6);
    /* replayed with its measured times (replay's default for it), one worker */
    snprintf(cmd, sizeof cmd,
             SYNCSIM " replay --profile %s --workers 1 --steps 3 --policy bsp --record --out %s "
                     "2>&1",
             measured, dir);
    CU_ASSERT_EQUAL_FATAL(run_or_say(cmd), 0);
    SS_CHECK_CLOSE(replayed_step1(dir), p1.measured_step_s, 0, 1e-9);
    profile_free(&p0);
    profile_free(&p1);
    /* a set without a reader (cifar100: a shape only): random data of its shape, said */
    snprintf(cmd, sizeof cmd,
             SYNCSIM " profile model --model cnn:4,8,16 --dataset cifar100 --batch 2 --measure cpu "
                     "--steps 1 --out %s 2>&1 && grep -q 'trained on random data' %s",
             measured, measured);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, &text), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "cifar100 unread: random data of its shape instead"));
    free(text);
    /* a model that does not fit is refused before it is created (exit 1), and nothing written */
    unlink(measured);
    snprintf(cmd, sizeof cmd,
             "SYNCSIM_MEMORY_LIMIT=1GB " SYNCSIM " profile model --model vgg:11 --batch 4096 "
             "--measure cpu --out %s 2>&1",
             measured);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, &text), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "use a smaller --batch"));
    CU_ASSERT_NOT_EQUAL(access(measured, F_OK), 0);
    free(text);
    snprintf(cmd, sizeof cmd, "rm -rf %s %s %s", dir, plain, measured);
    CU_ASSERT_EQUAL(system(cmd), 0);
}

/* --measure cpu on gpt models, pre-norm with GELU and the wlm preset (post-norm, ReLU: the same
 * laps in another order): trained on the text set's first windows, every cost layer timed in
 * both passes (a slot a lap forgot, or two laps given one slot, leaves one at 0) but the loss's,
 * whose forward counts in its backward, and the layers inside the step. */
static void test_measured_gpt(void) {
    const struct {
        const char *model;
        int layers; /* embed, 8 a block, norm_f (not wlm), head, loss */
    } cases[] = {{"gpt:2,32,2,8", 4 + 8 * 2}, {"gpt:wlm", 3 + 8 * 2}};
    char prof[160], cmd[1024];
    snprintf(prof, sizeof prof, "/tmp/ss_test_profile_model_%d_gpt.profile", (int)getpid());
    for (int c = 0; c < 2; c++) {
        snprintf(cmd, sizeof cmd,
                 SYNCSIM " profile model --model %s --dataset wikitext-2 --data-dir %s --batch 2 "
                         "--measure cpu --steps 2 --threads 2 --out %s 2>&1 && grep -q 'trained "
                         "on the first 2 training samples of wikitext-2' %s && grep -q -- "
                         "'--measure cpu --steps 2 --threads 2' %s",
                 cases[c].model, text_dir(), prof, prof, prof);
        CU_ASSERT_EQUAL_FATAL(run_or_say(cmd), 0);
        model_profile p;
        CU_ASSERT_EQUAL_FATAL(profile_load(prof, &p), SS_OK);
        CU_ASSERT_EQUAL(p.measured, 1);
        CU_ASSERT_EQUAL(p.measured_steps, 2);
        CU_ASSERT_EQUAL_FATAL(p.layers, cases[c].layers);
        double layers_s = 0.0;
        for (int i = 0; i < p.layers; i++) {
            const sim_layer_cost *l = &p.layer_costs[i];
            const int loss = i == p.layers - 1;
            if (!(loss ? l->fwd_s == 0 : l->fwd_s > 0) || !(l->bwd_s > 0))
                fprintf(stderr, "\n  %s layer %d (%s): forward %g s, backward %g s", cases[c].model,
                        i, p.layer_names[i], l->fwd_s, l->bwd_s);
            CU_ASSERT(loss ? l->fwd_s == 0 : l->fwd_s > 0);
            CU_ASSERT(l->bwd_s > 0);
            layers_s += l->fwd_s + l->bwd_s;
        }
        CU_ASSERT_STRING_EQUAL(p.layer_names[3], "h0.attn");
        CU_ASSERT(layers_s >= 0.5 * p.measured_step_s);
        SS_CHECK_CLOSE(layers_s + p.measured_gap_s, p.measured_step_s, 0, 1e-9);
        profile_free(&p);
        unlink(prof);
    }
}

/* Bad input: exit 2 naming the option, and no file. */
static void test_bad_input(void) {
    char prof[128], cmd[512];
    snprintf(prof, sizeof prof, "/tmp/ss_test_profile_model_%d_bad.profile", (int)getpid());
    const struct {
        const char *args, *says;
    } bad[] = {
        {"--model nosuch", "unknown model 'nosuch'"},
        {"--model resnet:20 --dataset web-bible", "is text: it takes a language model"},
        {"--model gpt:wlm --dataset cifar10", "is a language model"},
        {"--model mlp --dataset imagenet", "unknown data set 'imagenet'"},
        {"--model mlp --batch 0", "--batch: an integer from 1 to 1000000"},
        {"--model mlp --batch 12x", "--batch: an integer from 1 to 1000000"},
        {"--model mlp --name 'two words'", "--name: one word"},
        {"--model mlp --epochs 3", "unknown option '--epochs'"},
        {"--dataset cifar10", "missing --model"},
        {"--model mlp --measure tpu", "--measure: cpu, cuda or auto, not 'tpu'"},
        {"--model mlp --steps 3", "--steps needs --measure"},
        {"--model mlp --threads 2", "--threads needs --measure"},
        {"--model mlp --measure cpu --steps 0", "--steps: an integer from 1 to 1000000"},
        {"--model mlp --measure cpu --threads 2x", "--threads: an integer from 1 to 1024"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *text = NULL;
        snprintf(cmd, sizeof cmd, SYNCSIM " profile model %s --out %s 2>&1", bad[i].args, prof);
        int rc = ss_test_shell(cmd, &text);
        if (rc != 2 || !strstr(text, bad[i].says))
            fprintf(stderr, "\n  %s: exit %d, said: %s", bad[i].args, rc, text);
        CU_ASSERT_EQUAL(rc, 2);
        CU_ASSERT_PTR_NOT_NULL(strstr(text, bad[i].says));
        CU_ASSERT_NOT_EQUAL(access(prof, F_OK), 0);
        free(text);
    }
    /* the recipe's batch by default: resnet 128, gpt 20, mlp train's 64 */
    const struct {
        const char *model;
        int batch;
    } defaults[] = {{"resnet:20", 128}, {"vgg:11", 128}, {"mlp", 64}};
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) {
        snprintf(cmd, sizeof cmd, SYNCSIM " profile model --model %s --out %s 2>&1",
                 defaults[i].model, prof);
        CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
        model_profile p;
        CU_ASSERT_EQUAL_FATAL(profile_load(prof, &p), SS_OK);
        CU_ASSERT_EQUAL(p.batch, defaults[i].batch);
        CU_ASSERT_STRING_EQUAL(p.name, defaults[i].model);
        profile_free(&p);
        unlink(prof);
    }
}

static CU_TestInfo profile_model_tests[] = {
    {"profile model: mlp's replayed step is the emulation's (v100, fp32, eager)", test_mlp},
    {"profile model: cnn's replayed step is the emulation's (a100, pytorch, eager)", test_cnn},
    {"profile model: resnet:8,proj's replayed step is the emulation's (a100, graphs)", test_resnet},
    {"profile model: vgg:11's replayed step is the emulation's (h100, bf16, cifar100)", test_vgg},
    {"profile model: a gpt's replayed step is the emulation's (a100, fp16, text set)", test_gpt},
    {"profile model --measure cpu: the same layers with their measured seconds, replayed",
     test_measured},
    {"profile model --measure cpu: gpt's every layer timed in both passes", test_measured_gpt},
    {"profile model: bad input exits 2 without a file; the recipe's batch by default",
     test_bad_input},
    CU_TEST_INFO_NULL,
};

static void cleanup(void) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf /tmp/ss_test_profile_model_%d", (int)getpid());
    if (system(cmd) != 0) fprintf(stderr, "cannot remove the text set\n");
}

static CU_SuiteInfo suites[] = {
    {"profile_model", NULL, NULL, NULL, NULL, profile_model_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    int rc = ss_test_main(suites);
    cleanup();
    return rc;
}

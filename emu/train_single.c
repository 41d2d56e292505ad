/* The single-worker run: real training of one model replica on one device, without simulation.
 * It is the numerical reference the emulator builds on, and the uncoupled baseline for
 * measuring what SimGrid coupling costs in wall time. */
#include "common/csv.h"
#include "common/outputs.h"
#include "common/status.h"
#include "emu/augment.h"
#include "emu/dataset.h"
#include "emu/memory.h"
#include "emu/partition.h"
#include "emu/recipe.h"
#include "emu/run.h"
#include "kernels/device.h"
#include "kernels/model.h"
#include "kernels/optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct eval_result {
    double loss;     /* mean test loss */
    double accuracy; /* fraction correct */
} eval_result;

/* Everything the run holds open, released by single_close(). */
typedef struct single_run {
    const run_request *rq;
    const run_config *cfg;
    lr_schedule sched;
    dataset train, test;
    device *dev;
    model *m;
    sgd_state *opt;
    partition *part;
    batch_iter *it;
    augment aug; /* --augment yes */
    int augmenting;
    afile metrics;
    float *x; /* one mini-batch */
    uint8_t *y;
    size_t *idx;
    long steps_per_epoch, total_steps, eval_every;
    char memory_line[160]; /* the memory estimate, for the banner */
    /* the loop's state */
    const char *status;
    double loss_sum; /* training loss summed since the last evaluation */
    long loss_count, steps_done;
    eval_result ev;
    double wall_s;
} single_run;

static eval_result evaluate(model *m, const dataset *test) {
    eval_result r;
    size_t correct = 0;
    model_evaluate(m, test->x, test->y, test->n, &r.loss, &correct);
    r.accuracy = test->n ? (double)correct / (double)test->n : 0.0;
    return r;
}

/* Device, data, model, optimizer, batches; the step counts of the run. */
static int single_open(single_run *r) {
    const run_config *cfg = r->cfg;
    int rc;
    if ((rc = lr_schedule_parse(&r->sched, cfg->lr_schedule)) != SS_OK) return rc;
    r->sched.base_lr = r->rq->lr;
    model_spec spec; /* the model's text before the data set is loaded */
    if ((rc = model_spec_parse(&spec, cfg->model, 1, 28, 28, 10)) != SS_OK) return rc;
    if ((rc = run_open_data(cfg, &r->dev, &r->train, &r->test, &spec)) != SS_OK) return rc;
    rc = memory_check_run(r->dev, &spec, 0, 1, cfg->batch, 0, 0, r->memory_line,
                          sizeof r->memory_line);
    if (rc != SS_OK) return rc;
    if ((rc = model_create(r->dev, &spec, cfg->seed, cfg->batch, &r->m)) != SS_OK) return rc;
    r->opt = sgd_create(r->dev, model_param_count(r->m));
    sgd_set_nesterov(r->opt, cfg->nesterov);
    r->augmenting = !strcmp(cfg->augment, "yes");
    if (r->augmenting && (rc = augment_init(&r->aug, &r->train, 4, cfg->seed)) != SS_OK) return rc;
    rc = partition_create(&r->train, 1, PARTITION_DEFDP, 0, cfg->seed, &r->part);
    if (rc != SS_OK) return rc;
    r->it = batch_iter_create(r->part, 0, cfg->seed);
    r->steps_per_epoch = (long)(r->train.n / (size_t)cfg->batch);
    if (r->steps_per_epoch < 1)
        return ss_error_set(SS_EUSAGE, "--batch %d is larger than the training set (%zu samples)",
                            cfg->batch, r->train.n);
    r->total_steps = (long)llround(cfg->epochs * (double)r->steps_per_epoch);
    if (r->total_steps < 1) r->total_steps = 1; /* as a simulated run: at least one step */
    r->eval_every = cfg->eval_every > 0 ? cfg->eval_every : r->steps_per_epoch;
    r->sched.steps_per_epoch = r->steps_per_epoch;
    r->sched.total_steps = r->total_steps;
    r->sched.warmup_epochs = cfg->lr_warmup;
    return SS_OK;
}

static void print_banner(const single_run *r) {
    const run_config *cfg = r->cfg;
    const model *m = r->m;
    printf("syncsim train: one worker, seed %llu\n", (unsigned long long)cfg->seed);
    if (r->rq->config_table) fputs(r->rq->config_table, stdout);
    printf("device %s | %s\n", device_name(r->dev), r->memory_line);
    printf("model %s: %zu parameters, %.0f FLOP/sample forward, %.0f backward\n"
           "data %s: %zu train, %zu test samples | %ld steps (%ld per epoch)\n",
           cfg->model, model_param_count(m), model_forward_flops_per_sample(m),
           model_backward_flops_per_sample(m), r->train.name, r->train.n, r->test.n, r->total_steps,
           r->steps_per_epoch);
    char line[512];
    recipe_describe(cfg, r->sched.base_lr, line, sizeof line);
    printf("%s\n", line);
    fflush(stdout);
}

/* OUT/ with config.ini, OUT/metrics.csv with its header, and the mini-batch buffers. */
static int open_outputs(single_run *r) {
    const run_config *cfg = r->cfg;
    /* an earlier run's outputs in a reused directory go first (common/outputs.h) */
    static const char *const written[] = {"summary.json", "metrics.csv", NULL};
    int rc = ss_mkdir_p(cfg->out_dir);
    if (rc == SS_OK) rc = outputs_clear(cfg, written);
    if (rc == SS_OK) rc = outputs_open_dir(cfg, r->rq->config_ini);
    if (rc != SS_OK) return rc;
    char path[1024];
    outputs_path(cfg, "metrics.csv", path, sizeof path);
    if ((rc = afile_open(&r->metrics, path)) != SS_OK) return rc;
    fprintf(r->metrics.fp, "step,epoch,train_loss,test_loss,test_accuracy,test_perplexity\n");
    const size_t features = dataset_features(&r->train);
    r->x = ss_malloc(sizeof(float) * features * (size_t)cfg->batch);
    r->y = ss_malloc((size_t)cfg->batch);
    r->idx = ss_malloc(sizeof(size_t) * (size_t)cfg->batch);
    return SS_OK;
}

/* Evaluates and writes a metrics.csv row with the mean training loss since the last one. */
static void evaluate_row(single_run *r, long step) {
    r->ev = evaluate(r->m, &r->test);
    csv_write_numbers(r->metrics.fp, "%.0f %.6f %.6f %.6f %.6f %.6g",
                      (const double[]){(double)step, (double)step / (double)r->steps_per_epoch,
                                       r->loss_count ? r->loss_sum / (double)r->loss_count : NAN,
                                       r->ev.loss, r->ev.accuracy, exp(r->ev.loss)},
                      6);
    r->loss_sum = 0.0;
    r->loss_count = 0;
}

/* One SGD step on the next mini-batch; 0 if the loss is not finite. */
static int train_step(single_run *r, long step, double *loss) {
    const run_config *cfg = r->cfg;
    batch_iter_next(r->it, r->idx, cfg->batch);
    dataset_gather(&r->train, r->idx, cfg->batch, r->x, r->y);
    if (r->augmenting) augment_batch(&r->aug, r->x, cfg->batch, 0, step);
    *loss = model_forward_backward(r->m, r->x, r->y, cfg->batch);
    if (!isfinite(*loss)) return 0;
    if (cfg->clip_norm > 0)
        grad_clip_norm(r->dev, model_grads(r->m), model_param_count(r->m), cfg->clip_norm);
    sgd_step(r->opt, model_params(r->m), model_grads(r->m),
             (float)lr_schedule_at(&r->sched, step - 1), (float)cfg->momentum,
             (float)cfg->weight_decay);
    r->loss_sum += *loss;
    r->loss_count++;
    return 1;
}

static void train_loop(single_run *r) {
    outputs_install_interrupt_handler();
    progress bar;
    progress_begin(&bar, r->cfg->progress, r->total_steps);
    r->status = "ok";
    r->ev = (eval_result){NAN, 0.0};
    const double t0 = outputs_wall_s();
    long step;
    for (step = 1; step <= r->total_steps; step++) {
        double loss;
        if (!train_step(r, step, &loss)) {
            r->status = "diverged";
            fprintf(stderr, "syncsim: training loss is %g at step %ld: diverged\n", loss, step);
            break;
        }
        if (step % r->eval_every == 0 || step == r->total_steps) {
            evaluate_row(r, step);
            fflush(r->metrics.fp);
        }
        progress_update(&bar, step, "step %ld/%ld loss %.4f acc %.4f", step, r->total_steps, loss,
                        r->ev.accuracy);
        if (outputs_interrupted()) {
            r->status = "interrupted";
            break;
        }
    }
    progress_end(&bar);
    r->wall_s = outputs_wall_s() - t0;
    r->steps_done = step > r->total_steps ? r->total_steps : step;
    /* A stopped run still ends with an evaluation of the model as it is. */
    if (strcmp(r->status, "ok") != 0) evaluate_row(r, r->steps_done);
}

static void summarize(const single_run *r, run_summary *s) {
    const model *m = r->m;
    const double per_s = r->wall_s > 0 ? (double)r->steps_done * r->cfg->batch / r->wall_s : 0.0;
    run_summary_init(s);
    snprintf(s->status, sizeof s->status, "%s", r->status);
    snprintf(s->mode, sizeof s->mode, "single");
    s->test_accuracy = r->ev.accuracy;
    s->test_loss = isfinite(r->ev.loss) ? r->ev.loss : -1.0;
    if (model_is_language(m) && isfinite(r->ev.loss)) s->test_perplexity = exp(r->ev.loss);
    s->epochs = (double)r->steps_done / (double)r->steps_per_epoch;
    s->steps = r->steps_done;
    s->seed = r->cfg->seed;
    snprintf(s->device, sizeof s->device, "%s", device_name(r->dev));
    snprintf(s->model, sizeof s->model, "%s", r->cfg->model);
    snprintf(s->dataset, sizeof s->dataset, "%s", r->train.name);
    s->batch = r->cfg->batch;
    s->lr = r->sched.base_lr;
    recipe_summarize(r->cfg, s);
    s->params = (double)model_param_count(m);
    s->forward_flops_per_sample = model_forward_flops_per_sample(m);
    s->backward_flops_per_sample = model_backward_flops_per_sample(m);
    s->flops_per_sample = s->forward_flops_per_sample + s->backward_flops_per_sample;
    s->wall_s = r->wall_s;
    s->samples_per_s = per_s;
}

static void single_close(single_run *r) {
    if (r->metrics.fp) afile_abort(&r->metrics);
    free(r->x);
    free(r->y);
    free(r->idx);
    batch_iter_destroy(r->it);
    augment_free(&r->aug);
    partition_destroy(r->part);
    sgd_destroy(r->opt);
    model_destroy(r->m);
    dataset_free(&r->train);
    dataset_free(&r->test);
    device_close(r->dev);
}

static int single_finish(single_run *r, run_summary *sum) {
    int rc = afile_commit(&r->metrics);
    if (rc != SS_OK) return rc;
    summarize(r, sum);
    if ((rc = summary_write(r->cfg, sum)) != SS_OK) return rc;
    printf("%s: test accuracy %.4f, test loss %.4f after %ld steps (%.1f s, %.0f samples/s)\n"
           "outputs: %s/{config.ini,metrics.csv,summary.json}\n",
           r->status, r->ev.accuracy, r->ev.loss, r->steps_done, r->wall_s, sum->samples_per_s,
           r->cfg->out_dir);
    if (!strcmp(r->status, "diverged")) return SS_EDIVERGED;
    if (!strcmp(r->status, "interrupted")) return SS_EINTERRUPT;
    return SS_OK;
}

int run_train_single(const run_request *rq, run_summary *sum) {
    run_summary_init(sum);
    single_run r;
    memset(&r, 0, sizeof r);
    r.rq = rq;
    r.cfg = rq->cfg;
    int rc = single_open(&r);
    if (rc == SS_OK) {
        print_banner(&r);
        rc = open_outputs(&r);
    }
    if (rc == SS_OK) {
        train_loop(&r);
        rc = single_finish(&r, sum);
    }
    single_close(&r);
    return rc;
}

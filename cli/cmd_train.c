/* syncsim train, single worker: real training of one model replica on one device, without
 * simulation. It is the numerical reference the emulator builds on, and the uncoupled baseline
 * for measuring what SimGrid coupling costs in wall time. */
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/outputs.h"
#include "cli/run_emulation.h"
#include "common/status.h"
#include "emu/dataset.h"
#include "emu/partition.h"
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

static eval_result evaluate(model *m, const dataset *test) {
    eval_result r;
    size_t correct = 0;
    model_evaluate(m, test->x, test->y, test->n, &r.loss, &correct);
    r.accuracy = test->n ? (double)correct / (double)test->n : 0.0;
    return r;
}

int cmd_train_single(const run_config *cfg) {
    int rc;
    dataset train = {0}, test = {0};
    device *dev = NULL;
    model *m = NULL;
    sgd_state *opt = NULL;
    partition *part = NULL;
    batch_iter *it = NULL;
    afile metrics = {0};
    float *x = NULL;
    uint8_t *y = NULL;
    size_t *idx = NULL;
    cJSON *summary = NULL;

    lr_schedule sched;
    if ((rc = lr_schedule_parse(&sched, cfg->lr_schedule)) != SS_OK) return rc;
    sched.base_lr = options_learning_rate(cfg);

    model_spec spec;
    if ((rc = run_open_data(cfg, &dev, &train, &test, &spec)) != SS_OK) goto done;
    if ((rc = model_create(dev, &spec, cfg->seed, cfg->batch, &m)) != SS_OK) goto done;
    opt = sgd_create(dev, model_param_count(m));
    if ((rc = partition_create(&train, 1, PARTITION_DEFDP, 0, cfg->seed, &part)) != SS_OK)
        goto done;
    it = batch_iter_create(part, 0, cfg->seed);

    const long steps_per_epoch = (long)(train.n / (size_t)cfg->batch);
    if (steps_per_epoch < 1) {
        rc = ss_error_set(SS_EUSAGE, "--batch %d is larger than the training set (%zu samples)",
                          cfg->batch, train.n);
        goto done;
    }
    const long total_steps = (long)llround(cfg->epochs * (double)steps_per_epoch);
    const long eval_every = cfg->eval_every > 0 ? cfg->eval_every : steps_per_epoch;
    sched.steps_per_epoch = steps_per_epoch;
    sched.total_steps = total_steps;

    printf("syncsim train: one worker, seed %llu\n", (unsigned long long)cfg->seed);
    options_print_table(CMD_TRAIN, cfg, stdout);
    printf("device %s | model %s: %zu parameters, %.0f FLOP/sample forward, %.0f backward\n"
           "data %s: %zu train, %zu test samples | %ld steps (%ld per epoch)\n",
           device_name(dev), cfg->model, model_param_count(m), model_forward_flops_per_sample(m),
           model_backward_flops_per_sample(m), train.name, train.n, test.n, total_steps,
           steps_per_epoch);
    fflush(stdout);

    if ((rc = outputs_begin(CMD_TRAIN, cfg)) != SS_OK) goto done;
    char path[1024];
    outputs_path(cfg, "metrics.csv", path, sizeof path);
    if ((rc = afile_open(&metrics, path)) != SS_OK) goto done;
    fprintf(metrics.fp, "step,epoch,train_loss,test_loss,test_accuracy\n");

    const size_t features = dataset_features(&train);
    x = ss_malloc(sizeof(float) * features * (size_t)cfg->batch);
    y = ss_malloc((size_t)cfg->batch);
    idx = ss_malloc(sizeof(size_t) * (size_t)cfg->batch);

    outputs_install_interrupt_handler();
    progress bar;
    progress_begin(&bar, cfg->progress, total_steps);
    const char *status = "ok";
    double loss_sum = 0.0; /* training loss summed since the last evaluation */
    long loss_count = 0, step = 0;
    eval_result ev = {NAN, 0.0};
    const double t0 = outputs_wall_s();
    for (step = 1; step <= total_steps; step++) {
        batch_iter_next(it, idx, cfg->batch);
        dataset_gather(&train, idx, cfg->batch, x, y);
        double loss = model_forward_backward(m, x, y, cfg->batch);
        if (!isfinite(loss)) {
            status = "diverged";
            fprintf(stderr, "syncsim: training loss is %g at step %ld: diverged\n", loss, step);
            break;
        }
        sgd_step(opt, model_params(m), model_grads(m), (float)lr_schedule_at(&sched, step - 1),
                 (float)cfg->momentum, (float)cfg->weight_decay);
        loss_sum += loss;
        loss_count++;
        if (step % eval_every == 0 || step == total_steps) {
            ev = evaluate(m, &test);
            fprintf(metrics.fp, "%ld,%.6f,%.6f,%.6f,%.6f\n", step,
                    (double)step / (double)steps_per_epoch, loss_sum / (double)loss_count, ev.loss,
                    ev.accuracy);
            fflush(metrics.fp);
            loss_sum = 0.0;
            loss_count = 0;
        }
        progress_update(&bar, step, "step %ld/%ld loss %.4f acc %.4f", step, total_steps, loss,
                        ev.accuracy);
        if (outputs_interrupted()) {
            status = "interrupted";
            break;
        }
    }
    progress_end(&bar);
    const double wall_s = outputs_wall_s() - t0;
    long steps_done = step > total_steps ? total_steps : step;
    if (strcmp(status, "ok") != 0) {
        /* A stopped run still ends with an evaluation of the model as it is. */
        ev = evaluate(m, &test);
        fprintf(metrics.fp, "%ld,%.6f,%.6f,%.6f,%.6f\n", steps_done,
                (double)steps_done / (double)steps_per_epoch,
                loss_count ? loss_sum / (double)loss_count : NAN, ev.loss, ev.accuracy);
    }
    if ((rc = afile_commit(&metrics)) != SS_OK) goto done;

    summary = cJSON_CreateObject();
    cJSON_AddStringToObject(summary, "status", status);
    cJSON_AddStringToObject(summary, "mode", "single");
    cJSON_AddNumberToObject(summary, "test_accuracy", ev.accuracy);
    cJSON_AddNumberToObject(summary, "test_loss", isfinite(ev.loss) ? ev.loss : -1.0);
    cJSON_AddNumberToObject(summary, "epochs", (double)steps_done / (double)steps_per_epoch);
    cJSON_AddNumberToObject(summary, "steps", (double)steps_done);
    cJSON_AddNumberToObject(summary, "seed", (double)cfg->seed);
    cJSON_AddStringToObject(summary, "device", device_name(dev));
    cJSON_AddStringToObject(summary, "model", cfg->model);
    cJSON_AddStringToObject(summary, "dataset", train.name);
    cJSON_AddNumberToObject(summary, "batch", cfg->batch);
    cJSON_AddNumberToObject(summary, "lr", sched.base_lr);
    cJSON_AddNumberToObject(summary, "params", (double)model_param_count(m));
    cJSON_AddNumberToObject(summary, "flops_per_sample",
                            model_forward_flops_per_sample(m) + model_backward_flops_per_sample(m));
    cJSON_AddNumberToObject(summary, "forward_flops_per_sample", model_forward_flops_per_sample(m));
    cJSON_AddNumberToObject(summary, "backward_flops_per_sample",
                            model_backward_flops_per_sample(m));
    cJSON_AddNumberToObject(summary, "wall_time_s", wall_s);
    cJSON_AddNumberToObject(summary, "samples_per_s",
                            wall_s > 0 ? (double)steps_done * cfg->batch / wall_s : 0.0);
    if ((rc = outputs_write_json(cfg, "summary.json", summary)) != SS_OK) goto done;

    printf("%s: test accuracy %.4f, test loss %.4f after %ld steps (%.1f s, %.0f samples/s)\n"
           "outputs: %s/{config.ini,metrics.csv,summary.json}\n",
           status, ev.accuracy, ev.loss, steps_done, wall_s,
           wall_s > 0 ? (double)steps_done * cfg->batch / wall_s : 0.0, cfg->out_dir);
    if (!strcmp(status, "diverged"))
        rc = SS_EDIVERGED;
    else if (!strcmp(status, "interrupted"))
        rc = SS_EINTERRUPT;

done:
    if (metrics.fp) afile_abort(&metrics);
    cJSON_Delete(summary);
    free(x);
    free(y);
    free(idx);
    batch_iter_destroy(it);
    partition_destroy(part);
    sgd_destroy(opt);
    model_destroy(m);
    dataset_free(&train);
    dataset_free(&test);
    device_close(dev);
    return rc;
}

int cmd_train(const run_config *cfg) {
    /* One worker and no policy: real training without simulation. Anything else is emulated. */
    if (!cfg->policy[0] && cfg->workers == 1) return cmd_train_single(cfg);
    run_summary sum;
    return run_emulation(cfg, &sum, NULL);
}

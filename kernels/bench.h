/* Kernel benchmark: training throughput of each model against the machine's SGEMM rate.
 *
 *     bench_kernels("auto", 64, NULL, 0, 2.0, NULL, stdout);  // "mlp": that model only
 *
 * For logreg, mlp and cnn (or the one model asked for) on 1x28x28 inputs with 10 classes (random
 * data) it prints samples/s and achieved GFLOP/s (counted forward + backward FLOPs per sample times
 * samples, plus the SGD update, over the elapsed time; best of 5 timing windows), the best-of-5
 * GFLOP/s of a 2048^3 SGEMM measured in the same run on the same device, and the ratio model/SGEMM.
 * Returns SS_OK or the device error. On the CPU it also prints one core's fused multiply-add peak
 * (chains of FMAs on registers: the ceiling of any fp32 kernel on one thread) and adds the same
 * rates over the process's CPU time (samples per CPU second, ratio to the SGEMM's CPU-time rate):
 * on one thread on a loaded machine they are the figures least disturbed by other jobs. With more
 * than one BLAS thread it prints the table again on one thread (the figures
 * bench/pytorch_compare.py is compared with). When OpenBLAS runs its AVX2 kernels on a CPU with
 * AVX-512 it prints a note (OPENBLAS_CORETYPE).
 */
#ifndef SS_KERNELS_BENCH_H
#define SS_KERNELS_BENCH_H

#include <stdint.h>
#include <stdio.h>

/* model_name: a --model text (model_spec_parse: "cnn", "resnet:20", ...) for that model alone on
 * 1x28x28 inputs (SS_EUSAGE naming the valid forms for another), NULL for logreg, mlp and cnn. */
/* layers: after the table, each model's layers (model_set_layer_clock: events on a GPU, the wall
 * clock on the CPU): each layer's forward and backward milliseconds and GFLOP/s, and the
 * convolutions' rate against SGEMM. */
/* seconds: each model's timed seconds, the best of 5 windows of seconds / 5 reported (at least 2
 * steps a window); 2 in `syncsim bench kernels` unless --seconds says otherwise. */
struct device;
struct model;
struct model_spec;
/* fits: called before each model is created on dev for batches of `batch` (NULL: nothing):
 * SS_OK, or the error that refuses it (a memory check, which kernels/ leaves to its callers). */
typedef int (*bench_fits_fn)(struct device *dev, const struct model_spec *spec, int batch);
int bench_kernels(const char *device_request, int batch, const char *model_name, int layers,
                  double seconds, bench_fits_fn fits, FILE *out);

/* Each layer's measured seconds a training step of a model of `spec` on dev, on one batch
 * repeated: data_x (batch, C*H*W; a gpt model's T + 1 token ids) and data_y (batch; unread for
 * gpt), or random data of the spec's shape (random tokens of its vocabulary) where
 * data_x is NULL (the layer clock, model_set_layer_clock: events on a GPU, the wall clock on the
 * CPU, on the BLAS threads the caller set): 2 warm-up steps, then `steps` steps with the clock,
 * each followed by one without. fwd_s and bwd_s (model_spec_cost_layers' count and order) get
 * the mean seconds of each layer's forward and backward pass, scaled to the steps without the
 * clock (whose events cost a GPU's host time), *step_s the mean step without the clock, SGD's
 * update with momentum 0.9 and weight decay 5e-4 included (as bench_kernels trains), and
 * *marked_s (NULL: not wanted) the mean step with it. */
int bench_measure_layers(struct device *dev, const struct model_spec *spec, int batch, int steps,
                         const float *data_x, const uint8_t *data_y, double *fwd_s, double *bwd_s,
                         double *step_s, double *marked_s);
/* FNV-1a over the bytes of m's parameters on dev: the benchmarks' check that two runs trained
 * the same bits. */
uint32_t bench_param_checksum(struct device *dev, struct model *m);

#endif

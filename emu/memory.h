/* Memory a run will need, estimated before it allocates its replicas or SimGrid loads its
 * platform, against the memory the machine has available: a run that cannot fit is refused up
 * front (SS_ENOMEM, exit 1, with the estimate and what is available); one that takes more than
 * MEMORY_WARN_FRACTION of it runs with a warning on stderr.
 *
 *     if ((rc = memory_check_run(dev, &spec, workers, threads, max_batch,
 *                                memory_run_vectors(workers, async, group_size), hosts, line,
 *                                sizeof line)) != SS_OK) ...
 *
 * The available memory is MemAvailable of /proc/meminfo, or SYNCSIM_MEMORY_LIMIT (bytes, or
 * with a unit: 512MB, 8GB) when set, e.g. to stay inside a batch job's allocation. */
#ifndef SS_EMU_MEMORY_H
#define SS_EMU_MEMORY_H

#include "kernels/device.h"
#include "kernels/model.h"

#define MEMORY_WARN_FRACTION 0.5
/* SimGrid's memory per simulated host with its worker actor, measured on this project's
 * generated star clusters (SimGrid 3.32): `syncsim replay --profile alexnet --policy bsp
 * --workers N --steps 1 --collective ring-coarse` peaks (/usr/bin/time %M) at 262 MB for
 * N = 1,024 and 317 MB for N = 8,192, i.e. 7.6 KB a host; rounded up. */
#define MEMORY_BYTES_PER_HOST 8192.0

/* One model's bytes for batches of B samples: on the host (what the allocator hands out for it),
 * on its device (model_device_bytes) and of its parameters. Up to 2 x MEMORY_PROBE_BATCH samples
 * a model is created and measured; above, it is measured at MEMORY_PROBE_BATCH and twice that
 * and extrapolated linearly in the batch, so that the check allocates no more than a small model
 * whatever the batch asked for. Before either, it is measured at 1 and 2 samples; where the
 * model those would create does not fit in the memory available now (memory_available_bytes,
 * and a GPU's free memory), the size is extrapolated from 1 and 2 samples instead, so that a model
 * too large even at the measuring batch is never allocated (that extrapolation is high where
 * convolutions' column buffers stop growing with the batch: the cnn's twice its size at 64). */
#define MEMORY_PROBE_BATCH 32
typedef struct memory_model_size {
    double host, device, params;
} memory_model_size;
int memory_model_bytes(device *dev, const model_spec *spec, int batch, memory_model_size *out);
/* The same, always by creating the model at `batch` (what the extrapolation stands for). */
int memory_model_probe(device *dev, const model_spec *spec, int batch, memory_model_size *out);

/* The available memory in bytes (see above); SS_EUSAGE for a bad SYNCSIM_MEMORY_LIMIT, SS_EIO
 * when /proc/meminfo cannot be read. */
int memory_available_bytes(double *bytes);
/* The parameter-sized vectors a run keeps beside its replicas: the averages of the replicas
 * (emu/emulation.c) whose copies into the replicas wait for their next steps, two at a time (the
 * newest and the one before; one is what BSP, SelSync and FedAvg were seen to hold), or with
 * groups of group_size (DS-Sync; 0: none) one per group and one more (at most N/G were seen,
 * with and without stragglers); an asynchronous run's (SSP, ASP) server parameters and momentum
 * besides. */
int memory_run_vectors(int workers, int async, int group_size);
/* Bytes of `workers` replicas (and the evaluation model) of `spec` for batches of max_batch on
 * dev, each with its SGD momentum, the compute engine's `threads` threads (each a mini-batch's
 * staging, and with more than one an evaluation model each), `vectors` more vectors of the
 * parameters (memory_run_vectors), plus `hosts` simulated hosts; the size of one replica is what
 * creating one allocates, or its device memory (model_device_bytes: activations included) where
 * that is more. */
int memory_estimate_run(device *dev, const model_spec *spec, int workers, int threads,
                        int max_batch, int vectors, double hosts, double *bytes);
/* The estimate against the available memory: SS_ENOMEM naming both when it does not fit. On a
 * GPU (a device with memory of its own) the replicas, their momenta and the evaluation models are
 * checked against the GPU's free memory as well, and a refusal says how many workers would fit.
 * `line` (unless NULL) gets the estimate in one line for the run's banner. */
int memory_check_run(device *dev, const model_spec *spec, int workers, int threads, int max_batch,
                     int vectors, double hosts, char *line, size_t line_size);
/* workers 0 (with threads 1, vectors 0, hosts 0): one model trained alone (`train` without a
 * policy), its parameters, gradients, activations and momentum. */

#endif

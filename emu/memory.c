/* The memory estimate of a run (memory.h). */
#include "emu/memory.h"
#include "common/status.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* "8GB", "512MB", "1e9": bytes (decimal units, as the platform files write them). */
static int parse_limit(const char *text, double *bytes) {
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    static const struct {
        const char *unit;
        double scale;
    } units[] = {{"", 1},     {"B", 1},    {"kB", 1e3}, {"KB", 1e3},
                 {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}};
    if (end != text && !errno && v > 0 && text[0] >= '0' && text[0] <= '9')
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (!strcmp(end, units[i].unit)) {
                *bytes = v * units[i].scale;
                return SS_OK;
            }
    return ss_error_set(SS_EUSAGE,
                        "SYNCSIM_MEMORY_LIMIT: invalid value '%s' (expected bytes, or a number "
                        "with kB, MB, GB or TB)",
                        text);
}

int memory_available_bytes(double *bytes) {
    const char *limit = getenv("SYNCSIM_MEMORY_LIMIT");
    if (limit && limit[0]) return parse_limit(limit, bytes);
    FILE *fp = fopen("/proc/meminfo", "r");
    if (!fp) return ss_error_set(SS_EIO, "cannot read /proc/meminfo: %s", strerror(errno));
    char line[256];
    int found = 0;
    while (!found && fgets(line, sizeof line, fp)) {
        unsigned long long kb;
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            *bytes = (double)kb * 1024.0;
            found = 1;
        }
    }
    fclose(fp);
    return found ? SS_OK : ss_error_set(SS_EIO, "/proc/meminfo has no MemAvailable line");
}

/* Bytes the allocator hands out now (mapped blocks included). */
static double allocated_bytes(void) {
    struct mallinfo2 mi = mallinfo2();
    return (double)mi.uordblks + (double)mi.hblkhd;
}

/* What a run takes: on the host, and on a device with memory of its own (a GPU). */
typedef struct memory_parts {
    double host;
    double device; /* 0 where device memory is host memory (the CPU) */
    double device_per_worker;
} memory_parts;

/* One model of spec for batches of `batch`, created and measured: what the allocator saw (the CPU
 * device's memory and the host side of any device), and what the model holds on its device
 * (parameters, gradients, buffers, activations and their gradients, scratch). */
int memory_model_probe(device *dev, const model_spec *spec, int batch, memory_model_size *out) {
    const double before = allocated_bytes();
    model *probe = NULL;
    int rc = model_create(dev, spec, 1, batch, &probe);
    if (rc != SS_OK) return rc;
    out->host = allocated_bytes() - before;
    out->device = model_device_bytes(probe);
    out->params = model_param_bytes(probe);
    model_destroy(probe);
    return SS_OK;
}

/* out: a and b, measured at p and 2 p samples, extrapolated linearly to `batch` */
static void extrapolate(const memory_model_size *a, const memory_model_size *b, int p, int batch,
                        memory_model_size *out) {
    const double k = (double)(batch - 2 * p) / p;
    out->host = b->host + k * (b->host - a->host);
    out->device = b->device + k * (b->device - a->device);
    out->params = b->params;
}

/* Whether a model of size m fits in what is available now: on the CPU the larger of its two
 * views against the host's memory; on a GPU its device side against the GPU's free memory too. */
static int fits_now(device *dev, const memory_model_size *m, int *fits) {
    double have, dev_free = 0, dev_total = 0;
    int rc = memory_available_bytes(&have);
    if (rc != SS_OK) return rc;
    const int own_memory = device_memory_info(dev, &dev_free, &dev_total);
    if (own_memory)
        *fits = m->host <= have && m->device <= dev_free;
    else
        *fits = (m->host > m->device ? m->host : m->device) <= have;
    return SS_OK;
}

int memory_model_bytes(device *dev, const model_spec *spec, int batch, memory_model_size *out) {
    int rc;
    /* the largest model the measurement creates; first measured at 1 and 2 samples, and when
     * that model would not fit, extrapolated from them alone: so the check never allocates a
     * model it is about to refuse (which would take the machine's memory, or the GPU's) */
    const int probe = batch <= 2 * MEMORY_PROBE_BATCH ? batch : 2 * MEMORY_PROBE_BATCH;
    if (probe > 2) {
        memory_model_size one, two, guess;
        int fits = 1;
        if ((rc = memory_model_probe(dev, spec, 1, &one)) != SS_OK ||
            (rc = memory_model_probe(dev, spec, 2, &two)) != SS_OK)
            return rc;
        extrapolate(&one, &two, 1, probe, &guess);
        if ((rc = fits_now(dev, &guess, &fits)) != SS_OK) return rc;
        if (!fits) {
            extrapolate(&one, &two, 1, batch, out);
            return SS_OK;
        }
    }
    if (batch <= 2 * MEMORY_PROBE_BATCH) return memory_model_probe(dev, spec, batch, out);
    /* a model's memory grows linearly with its batch (activations and their gradients) beyond
     * a fixed part (parameters, gradients, buffers): measured at two batches, extrapolated */
    memory_model_size a, b;
    rc = memory_model_probe(dev, spec, MEMORY_PROBE_BATCH, &a);
    if (rc == SS_OK) rc = memory_model_probe(dev, spec, 2 * MEMORY_PROBE_BATCH, &b);
    if (rc != SS_OK) return rc;
    extrapolate(&a, &b, MEMORY_PROBE_BATCH, batch, out);
    return SS_OK;
}

static int estimate_parts(device *dev, const model_spec *spec, int workers, int threads,
                          int max_batch, int vectors, double hosts, memory_parts *p) {
    memory_model_size one;
    int rc = memory_model_bytes(dev, spec, max_batch, &one);
    if (rc != SS_OK) return rc;
    const double host_model = one.host, device_model = one.device, param_bytes = one.params;
    double free_bytes, total_bytes;
    const int own_memory = device_memory_info(dev, &free_bytes, &total_bytes);
    /* one model: on the CPU the larger of the two views of the same memory */
    double model_all =
        own_memory ? device_model : (host_model > device_model ? host_model : device_model);
    if (model_all < param_bytes) model_all = param_bytes;
    /* each worker: its model (parameters, gradients, activations) and its SGD momentum; and the
     * evaluation model. The compute engine (emu/emulation_jobs.c): per thread, a mini-batch's
     * staging on the host (samples and one more for the augmentation, labels); with more than
     * one thread, an evaluation model each. And the `vectors` the run keeps beside the
     * replicas (memory_run_vectors) */
    const double replica = model_all + param_bytes;
    const double sample_bytes = sizeof(float) * (double)spec->in_c * spec->in_h * spec->in_w;
    const double staging = sample_bytes * ((double)max_batch + 1) + (double)max_batch;
    const double models = replica * ((double)workers + 1) +
                          (threads > 1 ? (double)threads * model_all : 0.0) +
                          (double)vectors * param_bytes;
    const double host_side = (double)threads * staging + hosts * MEMORY_BYTES_PER_HOST;
    if (own_memory) {
        p->device = models;
        p->device_per_worker = replica;
        p->host = host_side + host_model * ((double)workers + 1 + (threads > 1 ? threads : 0));
    } else {
        p->device = p->device_per_worker = 0;
        p->host = host_side + models;
    }
    return SS_OK;
}

int memory_run_vectors(int workers, int async, int group_size) {
    if (async) return 2 + 2; /* the server's parameters and momentum, and two averages */
    if (group_size > 0 && group_size < workers) return (workers + group_size - 1) / group_size + 1;
    return 2;
}

int memory_estimate_run(device *dev, const model_spec *spec, int workers, int threads,
                        int max_batch, int vectors, double hosts, double *bytes) {
    memory_parts p;
    int rc = estimate_parts(dev, spec, workers, threads, max_batch, vectors, hosts, &p);
    if (rc == SS_OK) *bytes = p.host + p.device;
    return rc;
}

int memory_check_run(device *dev, const model_spec *spec, int workers, int threads, int max_batch,
                     int vectors, double hosts, char *line, size_t line_size) {
    double have;
    memory_parts p;
    int rc = estimate_parts(dev, spec, workers, threads, max_batch, vectors, hosts, &p);
    if (rc == SS_OK) rc = memory_available_bytes(&have);
    if (rc != SS_OK) return rc;
    const double need = p.host;
    /* what the estimate counts: one model alone (workers 0), or the replicas and what the host
     * adds to them (threads, hosts) */
    char what[160];
    if (workers == 0)
        snprintf(what, sizeof what, "the model with batch %d and its momentum", max_batch);
    else
        snprintf(what, sizeof what,
                 "%d replicas of the model with batch %d, %d compute threads, %.0f simulated hosts",
                 workers, max_batch, threads, hosts);
    if (need > have)
        return ss_error_set(SS_ENOMEM,
                            "this run needs about %.2f GB (%s) but %.2f GB are available (%s): "
                            "use %s",
                            need / 1e9, what, have / 1e9,
                            getenv("SYNCSIM_MEMORY_LIMIT") ? "SYNCSIM_MEMORY_LIMIT"
                                                           : "MemAvailable of /proc/meminfo",
                            workers ? "fewer --workers or --threads, a smaller --batch or platform"
                                    : "a smaller --batch");
    double dev_free = 0, dev_total = 0;
    if (p.device > 0) {
        device_memory_info(dev, &dev_free, &dev_total);
        if (p.device > dev_free) {
            /* on the GPU: each replica's size, and how many would fit */
            char fits[96] = "use ";
            if (workers > 0) {
                const double fixed = p.device - p.device_per_worker * (double)workers;
                const double fit = (dev_free - fixed) / p.device_per_worker;
                const int most = fit >= 1 ? (fit > 1e9 ? 1000000000 : (int)fit) : 0;
                snprintf(what, sizeof what,
                         "%d replicas of the model with batch %d, %.3f GB each, %d compute threads",
                         workers, max_batch, p.device_per_worker / 1e9, threads);
                snprintf(fits, sizeof fits, "%s%d workers fit; use fewer --workers or --threads, ",
                         most ? "at most " : "", most);
            }
            return ss_error_set(SS_ENOMEM,
                                "this run needs about %.2f GB of GPU memory (%s) but %s has %.2f "
                                "GB free: %sa smaller --batch, or --device cpu",
                                p.device / 1e9, what, device_name(dev), dev_free / 1e9, fits);
        }
    }
    if (need > MEMORY_WARN_FRACTION * have)
        fprintf(stderr, "syncsim: warning: this run needs about %.2f GB of the %.2f GB available\n",
                need / 1e9, have / 1e9);
    if (p.device > MEMORY_WARN_FRACTION * dev_free && p.device > 0)
        fprintf(stderr,
                "syncsim: warning: this run needs about %.2f GB of the GPU's %.2f GB free\n",
                p.device / 1e9, dev_free / 1e9);
    if (line && line_size) {
        int n = snprintf(line, line_size, "memory about %.2f GB of %.2f GB available", need / 1e9,
                         have / 1e9);
        if (p.device > 0 && n > 0 && (size_t)n < line_size)
            snprintf(line + n, line_size - (size_t)n, ", %.2f GB of the GPU's %.2f GB free",
                     p.device / 1e9, dev_free / 1e9);
    }
    return SS_OK;
}

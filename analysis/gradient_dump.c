#include "analysis/gradient_dump.h"
#include "common/afile.h"
#include "common/number.h"
#include "common/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gradient_dump {
    long steps[GRADIENT_DUMP_MAX_STEPS];
    int n_steps;
    char dir[1024];
    float *host; /* (capacity) download buffer */
    size_t capacity;
    int reported; /* an error was already printed */
};

int gradient_dump_create(const char *steps, const char *out_dir, gradient_dump **out) {
    *out = NULL;
    if (!steps || !steps[0]) return SS_OK;
    gradient_dump *gd = ss_calloc(1, sizeof *gd);
    snprintf(gd->dir, sizeof gd->dir, "%s", out_dir);
    double v[GRADIENT_DUMP_MAX_STEPS];
    int rc = number_parse_list(steps, 1, v, GRADIENT_DUMP_MAX_STEPS, &gd->n_steps);
    for (int i = 0; rc == 0 && i < gd->n_steps; i++)
        if (v[i] < 1) rc = -1;
    if (rc != 0) {
        free(gd);
        if (rc == -2)
            return ss_error_set(SS_EUSAGE, "--dump-gradients: at most %d steps",
                                GRADIENT_DUMP_MAX_STEPS);
        return ss_error_set(SS_EUSAGE,
                            "--dump-gradients: '%s' is not a list of steps (positive integers "
                            "separated by commas, e.g. 1,100,500)",
                            steps);
    }
    for (int i = 0; i < gd->n_steps; i++)
        gd->steps[i] = (long)v[i];
    *out = gd;
    return SS_OK;
}

void gradient_dump_destroy(gradient_dump *gd) {
    if (!gd) return;
    free(gd->host);
    free(gd);
}

long gradient_dump_last_step(const gradient_dump *gd) {
    long last = 0;
    for (int i = 0; gd && i < gd->n_steps; i++)
        if (gd->steps[i] > last) last = gd->steps[i];
    return last;
}

int gradient_dump_wants(const gradient_dump *gd, long step) {
    if (!gd) return 0;
    for (int i = 0; i < gd->n_steps; i++)
        if (gd->steps[i] == step) return 1;
    return 0;
}

void gradient_dump_device(gradient_dump *gd, device *dev, const float *dev_grads, size_t n,
                          long step, int worker) {
    if (n > gd->capacity) {
        free(gd->host);
        gd->host = ss_malloc(sizeof(float) * n);
        gd->capacity = n;
    }
    device_download(dev, gd->host, dev_grads, n);
    if (analysis_dump_gradients(gd->host, n, step, worker, gd->dir) != SS_OK && !gd->reported) {
        fprintf(stderr, "syncsim: gradient sample not written: %s\n", ss_error_message());
        gd->reported = 1;
    }
}

int analysis_dump_gradients(const float *host_grads, size_t n, long step, int worker,
                            const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/gradients", dir);
    int rc = ss_mkdir_p(path);
    if (rc != SS_OK) return rc;
    snprintf(path, sizeof path, "%s/gradients/step-%ld-worker-%d.txt", dir, step, worker);
    /* An even stride over all layers, so that every layer is represented in proportion. */
    const size_t stride = n > GRADIENT_DUMP_MAX_VALUES
                              ? (n + GRADIENT_DUMP_MAX_VALUES - 1) / GRADIENT_DUMP_MAX_VALUES
                              : 1;
    afile f;
    if ((rc = afile_open(&f, path)) != SS_OK) return rc;
    fprintf(f.fp, "# syncsim gradient sample, format 1\n");
    fprintf(f.fp, "# step %ld worker %d params %zu stride %zu\n", step, worker, n, stride);
    for (size_t i = 0; i < n; i += stride)
        fprintf(f.fp, "%.9g\n", (double)host_grads[i]);
    return afile_commit(&f);
}

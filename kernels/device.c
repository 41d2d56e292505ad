/* Device selection and the public entry points, dispatched through the backend table. */
#include "kernels/device_impl.h"

#include "common/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int device_cuda_available(char *reason, size_t reason_size) {
#ifdef SS_HAVE_CUDA
    return device_cuda_probe(reason, reason_size);
#else
    if (reason && reason_size) snprintf(reason, reason_size, "built without CUDA");
    return 0;
#endif
}

int device_open(const char *request, device **out, char *notice, size_t notice_size) {
    SS_ASSERT(request && out);
    *out = NULL;
    if (notice && notice_size) notice[0] = '\0';
    int want_auto = strcmp(request, "auto") == 0;
    int want_cuda = strcmp(request, "cuda") == 0;
    int want_cpu = strcmp(request, "cpu") == 0;
    if (!want_auto && !want_cuda && !want_cpu)
        return ss_error_set(SS_EUSAGE, "unknown device '%s' (valid: auto, cpu, cuda)", request);

    device *dev = ss_calloc(1, sizeof *dev);
    if (want_auto || want_cuda) {
        char reason[200] = "";
        if (device_cuda_available(reason, sizeof reason)) {
#ifdef SS_HAVE_CUDA
            if (device_cuda_init(dev, reason, sizeof reason) == SS_OK) {
                *out = dev;
                return SS_OK;
            }
#endif
        }
        if (want_cuda) {
            free(dev);
            return ss_error_set(SS_EDEVICE, "device 'cuda' requested but no usable GPU (%s)",
                                reason);
        }
        if (notice && notice_size)
            snprintf(notice, notice_size, "syncsim: no usable GPU (CUDA: %s); running on the CPU",
                     reason);
    }
    int status = device_cpu_init(dev);
    if (status != SS_OK) {
        free(dev);
        return status;
    }
    *out = dev;
    return SS_OK;
}

void device_close(device *dev) {
    if (!dev) return;
    if (dev->ops->close) dev->ops->close(dev);
    free(dev);
}

device_kind device_get_kind(const device *dev) {
    return dev->kind;
}

const char *device_name(const device *dev) {
    return dev->name;
}

float *device_alloc(device *dev, size_t count) {
    return dev->ops->alloc(dev, count);
}

void device_free(device *dev, float *p) {
    if (p) dev->ops->free(dev, p);
}

void device_upload(device *dev, float *dst, const float *host_src, size_t count) {
    if (count) dev->ops->upload(dev, dst, host_src, count);
}

void device_download(device *dev, float *host_dst, const float *src, size_t count) {
    if (count) dev->ops->download(dev, host_dst, src, count);
}

void device_copy(device *dev, float *dst, const float *src, size_t count) {
    if (count && dst != src) dev->ops->copy(dev, dst, src, count);
}

void device_sync(device *dev) {
    dev->ops->sync(dev);
}

int device_share_with_host(device *dev) {
    return dev->ops->share_with_host ? dev->ops->share_with_host(dev) : SS_OK;
}

void device_place(device *dev, float *p, size_t count, int on_host) {
    if (dev->ops->place && count)
        dev->ops->place(dev, p, count, on_host);
    else if (on_host)
        dev->ops->sync(dev);
}

int device_memory_info(device *dev, double *free_bytes, double *total_bytes) {
    *free_bytes = *total_bytes = 0;
    return dev->ops->memory_info ? dev->ops->memory_info(dev, free_bytes, total_bytes) : 0;
}

int device_lanes_reserve(device *dev, int lanes) {
    return dev->ops->lanes_reserve ? dev->ops->lanes_reserve(dev, lanes) : SS_OK;
}

void device_lane_enter(device *dev, int lane) {
    if (dev->ops->lane_enter) dev->ops->lane_enter(dev, lane);
}

void device_lane_leave(device *dev) {
    if (dev->ops->lane_leave) dev->ops->lane_leave(dev);
}

void device_axpy(device *dev, size_t n, float a, const float *x, float *y) {
    if (n) dev->ops->axpy(dev, n, a, x, y);
}

void device_scale(device *dev, size_t n, float a, float *x) {
    if (n) dev->ops->scale(dev, n, a, x);
}

void device_mean(device *dev, size_t n, int k, const float *const *xs, float *out) {
    SS_ASSERT(k >= 1);
    if (n) dev->ops->mean(dev, n, k, xs, out);
}

double device_nrm2(device *dev, size_t n, const float *x) {
    return n ? dev->ops->nrm2(dev, n, x) : 0.0;
}

void device_masked_copy(device *dev, size_t n, const uint8_t *mask, const float *src, float *dst) {
    if (n) dev->ops->masked_copy(dev, n, mask, src, dst);
}

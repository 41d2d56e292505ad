/* The compute device: one interface (a struct of function pointers in device_impl.h) with a CPU
 * backend (cblas on OpenBLAS) and a CUDA backend (cuBLAS plus our own kernels).
 *
 * Every float buffer that a layer, model or optimizer touches lives on the device and is
 * allocated with device_alloc(). On the CPU backend device pointers are host pointers.
 *
 *     device *dev; char notice[256];
 *     if (device_open("auto", &dev, notice, sizeof notice) != SS_OK) ...   // notice: fallback line
 *     float *v = device_alloc(dev, n); device_upload(dev, v, host, n); ... device_free(dev, v);
 *
 * Vector ops are the ones aggregation needs; each has one CPU reference implementation.
 */
#ifndef SS_KERNELS_DEVICE_H
#define SS_KERNELS_DEVICE_H

#include <stddef.h>
#include <stdint.h>

typedef enum device_kind { DEVICE_KIND_CPU = 0, DEVICE_KIND_CUDA = 1 } device_kind;

typedef struct device device;

/* Opens "auto", "cpu" or "cuda". "auto" takes CUDA when a GPU is usable, else the CPU, and then
 * writes one line into `notice` saying it fell back and why (notice is "" otherwise).
 * "cuda" without a usable GPU fails with SS_EDEVICE and the reason. Unknown names: SS_EUSAGE. */
int device_open(const char *request, device **out, char *notice, size_t notice_size);
void device_close(device *dev);
device_kind device_get_kind(const device *dev);
const char *device_name(const device *dev); /* "cpu (OpenBLAS, 2 threads)", "cuda (NVIDIA H100)" */
/* 1 when the CUDA backend is compiled in and a GPU is usable right now; reason set otherwise. */
int device_cuda_available(char *reason, size_t reason_size);

/* ---- memory (count = number of floats) ---- */
float *device_alloc(device *dev, size_t count); /* zero-filled; aborts on failure */
void device_free(device *dev, float *p);
void device_upload(device *dev, float *dst, const float *host_src, size_t count);
void device_download(device *dev, float *host_dst, const float *src, size_t count);
void device_copy(device *dev, float *dst, const float *src, size_t count); /* device to device */
void device_sync(device *dev); /* wait until queued work is done (no-op on the CPU) */
/* From now on device_alloc() returns memory that the host may read and write as well (CUDA
 * managed memory), so that a library which knows nothing of GPUs (an MPI without CUDA support)
 * can send from device vectors and receive into them. The host touches such memory only after
 * device_sync(); kernels queued later see what it wrote. A no-op on the CPU, whose device
 * memory is host memory. SS_EDEVICE, with the reason, when the GPU cannot share memory with the
 * host while kernels run (its concurrentManagedAccess attribute is 0). */
int device_share_with_host(device *dev);
/* Moves shared memory (device_share_with_host) to where it is used next, in one transfer rather
 * than page by page as it is touched: on_host 1 before the host reads or writes it (waits until
 * it is there, after the kernels queued before), 0 before kernels do (queued). A no-op on the
 * CPU and for memory that is not shared. */
void device_place(device *dev, float *p, size_t count, int on_host);

/* 1 when dev has memory of its own (a GPU), with its free and total bytes now; 0 on the CPU,
 * whose device memory is host memory. */
int device_memory_info(device *dev, double *free_bytes, double *total_bytes);

/* ---- lanes: independent queues of work, one per thread that computes at the same time ----
 * On the GPU a lane is a CUDA stream with its own cuBLAS handle and scratch, so threads that
 * compute different replicas at once run their kernels side by side; lane 0 is the device's
 * own, which a thread uses until it enters another. On the CPU lanes are nothing: each call
 * runs in the thread that makes it.
 *
 *     device_lanes_reserve(dev, threads);          // once, before the threads start
 *     device_lane_enter(dev, slot + 1); ...work...; device_lane_leave(dev);   // in each thread
 *
 * Entering lane L makes its work wait (on the device, without blocking the host) for what lane 0
 * has queued so far; leaving waits until the lane's work is done, so whoever reads its results
 * next sees them. A lane is used by one thread at a time. The results are the same bits in any
 * lane: each replica's kernels are the same, in the same order. */
int device_lanes_reserve(device *dev, int lanes); /* lanes 1 .. lanes; SS_EDEVICE with reason */
void device_lane_enter(device *dev, int lane);
void device_lane_leave(device *dev);

/* ---- vector ops for aggregation (all on device buffers of n floats) ---- */
void device_axpy(device *dev, size_t n, float a, const float *x, float *y); /* y += a x */
void device_scale(device *dev, size_t n, float a, float *x);                /* x *= a */
/* out = (1/k) sum_j xs[j]; out may alias xs[0]. Summed in a fixed order (j = 0..k-1) so the
 * result does not depend on timing. */
void device_mean(device *dev, size_t n, int k, const float *const *xs, float *out);
double device_nrm2(device *dev, size_t n, const float *x); /* L2 norm, accumulated in double */
/* dst[i] = src[i] where mask[i] != 0 (mask is a host array of n bytes). */
void device_masked_copy(device *dev, size_t n, const uint8_t *mask, const float *src, float *dst);

#endif

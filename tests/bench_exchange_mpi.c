/* The MPI exchange's all-reduce against a bare MPI_Allreduce of the same buffer, through the
 * same loader (common/mpi_api.h), interleaved call by call, for 4 KB, 1 MB and 25 MB:
 *     mpirun -np 4 --oversubscribe --allow-run-as-root --mca btl self,tcp \
 *            --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo build/tests/bench_exchange_mpi
 * Every rank is a worker (no server). A repetition's time is the slowest rank's (a barrier
 * before each call, the maximum over the ranks after); rank 0 prints the medians, their ratio
 * and the median of the ratios of each interleaved pair (the overhead, robust to other load). Built
 * with the tests, never run by ctest (timing). */
#include "common/mpi_api.h"
#include "common/status.h"
#include "sim/exchange/exchange_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One timed call: the exchange's all-reduce (via_exchange) or the bare one; seconds, the
 * slowest rank's. */
static double timed(const mpi_api *mpi, exchange *ex, exchange_group *g, int rank, float *buf,
                    size_t count, int via_exchange) {
    mpi->barrier(mpi->comm_world);
    double t0 = mono_s();
    int rc;
    if (via_exchange)
        rc = ex->ops->allreduce(ex->self, g, rank, buf, count, 4.0 * (double)count, NULL);
    else
        rc = mpi_api_check(mpi->allreduce(MPI_API_IN_PLACE, buf, (int)count, mpi->type_float,
                                          mpi->op_sum, mpi->comm_world),
                           "MPI_Allreduce");
    double dt = mono_s() - t0;
    if (rc != SS_OK) {
        fprintf(stderr, "bench_exchange_mpi: %s\n", ss_error_message());
        mpi->abort(mpi->comm_world, 1);
    }
    mpi->allreduce(MPI_API_IN_PLACE, &dt, 1, mpi->type_double, mpi->op_max, mpi->comm_world);
    return dt;
}

static void bench_size(const mpi_api *mpi, exchange *ex, int rank, size_t bytes, int reps) {
    size_t count = bytes / sizeof(float);
    float *buf = calloc(count, sizeof(float));
    double *t_ex = calloc((size_t)reps, sizeof(double)),
           *t_mpi = calloc((size_t)reps, sizeof(double));
    exchange_group *g = ex->ops->group(ex->self, NULL, 0);
    for (int w = 0; w < 3; w++) { /* warm-up: connections, buffers */
        timed(mpi, ex, g, rank, buf, count, 1);
        timed(mpi, ex, g, rank, buf, count, 0);
    }
    for (int r = 0; r < reps; r++) { /* interleaved, the order alternating */
        int first = r % 2;
        double a = timed(mpi, ex, g, rank, buf, count, first);
        double b = timed(mpi, ex, g, rank, buf, count, !first);
        t_ex[r] = first ? a : b;
        t_mpi[r] = first ? b : a;
    }
    /* the ratio of each pair, so that load from other processes, which drifts over seconds,
     * cancels between the two calls of a pair */
    double *ratio = calloc((size_t)reps, sizeof(double));
    for (int r = 0; r < reps; r++)
        ratio[r] = t_ex[r] / t_mpi[r];
    double m_ex = median(t_ex, reps), m_mpi = median(t_mpi, reps), m_ratio = median(ratio, reps);
    if (rank == 0)
        printf("%10zu %6d %14.1f %14.1f %9.3f %11.3f\n", bytes, reps, 1e6 * m_ex, 1e6 * m_mpi,
               m_ex / m_mpi, m_ratio);
    free(ratio);
    free(buf);
    free(t_ex);
    free(t_mpi);
}

int main(void) {
    if (!mpi_api_under_launcher()) {
        fprintf(stderr, "bench_exchange_mpi: run it under mpirun (see its header)\n");
        return 2;
    }
    const mpi_api *mpi;
    int rank = 0, size = 0;
    if (mpi_api_init(&mpi) != SS_OK) {
        fprintf(stderr, "bench_exchange_mpi: %s\n", ss_error_message());
        return 1;
    }
    mpi->comm_rank(mpi->comm_world, &rank);
    mpi->comm_size(mpi->comm_world, &size);
    exchange_mpi_opts o = {.n_workers = size, .n_servers = 0};
    exchange *ex;
    if (exchange_mpi_open(&o, &ex) != SS_OK) {
        fprintf(stderr, "bench_exchange_mpi: %s\n", ss_error_message());
        return 1;
    }
    if (rank == 0)
        printf("# %d ranks; median of the slowest rank's time per call\n"
               "%10s %6s %14s %14s %9s %11s\n",
               size, "bytes", "reps", "exchange_us", "mpi_us", "ratio", "pair_ratio");
    bench_size(mpi, ex, rank, 4096, 400);
    bench_size(mpi, ex, rank, 1 << 20, 60);
    bench_size(mpi, ex, rank, 25u << 20, 30);
    exchange_mpi_close(ex);
    mpi_api_finalize();
    return 0;
}

/* SMPI reference for `syncsim bench network`: one MPI_Allreduce of BYTES bytes, timed in
 * simulated time. Built with smpicc at build time (sim/CMakeLists.txt), run by bench_network with
 * smpirun on the same platform file.
 *
 *     smpirun -np N -platform P.xml -hostfile H --cfg=smpi/allreduce:lr ./bench_smpi_allreduce
 * BYTES
 *
 * The buffers are SMPI_SHARED_MALLOC (one physical copy for all ranks, payload copies skipped)
 * and the reduction is a user operation that does nothing: what is measured is the algorithm's
 * messages, as in syncsim's own collectives, not this machine's memory bandwidth. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void reduce_nothing(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)in;
    (void)inout;
    (void)len;
    (void)type;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long bytes = argc > 1 ? atol(argv[1]) : 0;
    if (bytes <= 0 || bytes % 4 != 0) {
        if (rank == 0) fprintf(stderr, "usage: %s BYTES (a positive multiple of 4)\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    int count = (int)(bytes / 4);
    float *in = SMPI_SHARED_MALLOC((size_t)bytes);
    float *out = SMPI_SHARED_MALLOC((size_t)bytes);
    MPI_Op op;
    MPI_Op_create(reduce_nothing, 1, &op);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(in, out, count, MPI_FLOAT, op, MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    double local = t1 - t0, longest = 0;
    MPI_Reduce(&local, &longest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("smpi_allreduce_s %.9f ranks %d bytes %ld\n", longest, size, bytes);
    MPI_Op_free(&op);
    SMPI_SHARED_FREE(in);
    SMPI_SHARED_FREE(out);
    MPI_Finalize();
    return 0;
}

#include "analysis/ranks.h"
#include "common/mpi_api.h"
#include "common/status.h"

#include <stdlib.h>

/* MPI through common/mpi_api.h (OpenMPI opened at run time: SimGrid exports MPI_* itself). */
static const mpi_api *mpi;

int ranks_compiled_with_mpi(void) {
    return mpi_api_compiled();
}

int ranks_init(int *rank, int *size) {
    *rank = 0;
    *size = 1;
    if (!mpi_api_compiled() || !getenv("OMPI_COMM_WORLD_SIZE")) return SS_OK;
    /* Each point runs in a forked child that never calls MPI: OpenMPI's warning about fork does
     * not apply. */
    setenv("OMPI_MCA_mpi_warn_on_fork", "0", 0);
    const mpi_api *m = NULL;
    int rc = mpi_api_init(&m);
    if (rc != SS_OK) return ss_error_set(rc, "mpirun: %s", ss_error_message());
    mpi = m;
    mpi->comm_rank(mpi->comm_world, rank);
    mpi->comm_size(mpi->comm_world, size);
    return SS_OK;
}

void ranks_barrier(void) {
    if (mpi) mpi->barrier(mpi->comm_world);
}

int ranks_sum(int value) {
    if (!mpi) return value;
    int total = 0;
    mpi->allreduce(&value, &total, 1, mpi->type_int, mpi->op_sum, mpi->comm_world);
    return total;
}

void ranks_finalize(void) {
    if (mpi) mpi_api_finalize();
    mpi = NULL;
}

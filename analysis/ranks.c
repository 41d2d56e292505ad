#include "analysis/ranks.h"
#include "common/status.h"

#include <stdlib.h>

#ifdef SS_HAVE_MPI
#include <dlfcn.h>

/* libsimgrid exports MPI_Init and the rest of MPI (SMPI), and syncsim links it, so a direct call
 * would reach SimGrid's MPI, not OpenMPI's. OpenMPI's libmpi is therefore opened at run time with
 * RTLD_DEEPBIND (it resolves its own symbols first) and called through pointers from its handle.
 * The handles follow OpenMPI's ABI: communicators, datatypes and operations are pointers to the
 * predefined objects ompi_mpi_comm_world, ompi_mpi_int and ompi_mpi_op_sum. */
typedef struct mpi_api {
    void *lib;
    int (*init)(int *, char ***);
    int (*comm_rank)(void *, int *);
    int (*comm_size)(void *, int *);
    int (*barrier)(void *);
    int (*allreduce)(const void *, void *, int, void *, void *, void *);
    int (*finalize)(void);
    void *comm_world, *type_int, *op_sum;
} mpi_api;
static mpi_api mpi;
static int mpi_started;

/* AddressSanitizer refuses RTLD_DEEPBIND (it would bypass its interceptors): the sanitizer build
 * opens libmpi without it and still takes every entry point from libmpi's own handle (dlsym),
 * so only libmpi's calls into itself may reach SMPI's copies, which OpenMPI routes through its
 * internal ompi_* functions instead. */
#if defined(__SANITIZE_ADDRESS__)
#define SS_MPI_DEEPBIND 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SS_MPI_DEEPBIND 0
#endif
#endif
#ifndef SS_MPI_DEEPBIND
#define SS_MPI_DEEPBIND RTLD_DEEPBIND
#endif

static int mpi_load(void) {
    static const char *const names[] = {SS_MPI_LIBRARY, "libmpi.so.40", "libmpi.so", NULL};
    for (int i = 0; names[i] && !mpi.lib; i++)
        mpi.lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL | SS_MPI_DEEPBIND);
    if (!mpi.lib)
        return ss_error_set(SS_EIO,
                            "mpirun: cannot open OpenMPI's libmpi (%s): install "
                            "libopenmpi-dev or run without mpirun",
                            dlerror());
    *(void **)&mpi.init = dlsym(mpi.lib, "MPI_Init");
    *(void **)&mpi.comm_rank = dlsym(mpi.lib, "MPI_Comm_rank");
    *(void **)&mpi.comm_size = dlsym(mpi.lib, "MPI_Comm_size");
    *(void **)&mpi.barrier = dlsym(mpi.lib, "MPI_Barrier");
    *(void **)&mpi.allreduce = dlsym(mpi.lib, "MPI_Allreduce");
    *(void **)&mpi.finalize = dlsym(mpi.lib, "MPI_Finalize");
    mpi.comm_world = dlsym(mpi.lib, "ompi_mpi_comm_world");
    mpi.type_int = dlsym(mpi.lib, "ompi_mpi_int");
    mpi.op_sum = dlsym(mpi.lib, "ompi_mpi_op_sum");
    if (!mpi.init || !mpi.comm_rank || !mpi.comm_size || !mpi.barrier || !mpi.allreduce ||
        !mpi.finalize || !mpi.comm_world || !mpi.type_int || !mpi.op_sum)
        return ss_error_set(SS_EIO, "mpirun: the MPI library found is not OpenMPI's");
    return SS_OK;
}
#endif

int ranks_compiled_with_mpi(void) {
#ifdef SS_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

int ranks_init(int *rank, int *size) {
    *rank = 0;
    *size = 1;
#ifdef SS_HAVE_MPI
    if (!getenv("OMPI_COMM_WORLD_SIZE")) return SS_OK;
    /* Each point runs in a forked child that never calls MPI: OpenMPI's warning about fork does
     * not apply. */
    setenv("OMPI_MCA_mpi_warn_on_fork", "0", 0);
    int rc = mpi_load();
    if (rc != SS_OK) return rc;
    if (mpi.init(NULL, NULL) != 0) return ss_error_set(SS_EIO, "MPI_Init failed");
    mpi_started = 1;
    mpi.comm_rank(mpi.comm_world, rank);
    mpi.comm_size(mpi.comm_world, size);
#endif
    return SS_OK;
}

void ranks_barrier(void) {
#ifdef SS_HAVE_MPI
    if (mpi_started) mpi.barrier(mpi.comm_world);
#endif
}

int ranks_sum(int value) {
#ifdef SS_HAVE_MPI
    if (mpi_started) {
        int total = 0;
        mpi.allreduce(&value, &total, 1, mpi.type_int, mpi.op_sum, mpi.comm_world);
        return total;
    }
#endif
    return value;
}

void ranks_finalize(void) {
#ifdef SS_HAVE_MPI
    if (mpi_started) mpi.finalize();
    mpi_started = 0;
#endif
}

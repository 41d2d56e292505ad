/* OpenMPI, opened at run time. libsimgrid exports the whole MPI API itself (SMPI) and syncsim
 * links it, so a direct call to MPI_Init or MPI_Send would reach SimGrid's copy. This module
 * opens OpenMPI's libmpi with dlopen (RTLD_DEEPBIND: libmpi resolves its own symbols first) and
 * hands out a table of its entry points and predefined objects, taken by dlsym. It is the
 * project's only MPI loader (analysis/ranks.c and sim/exchange/exchange_mpi.c use it).
 *
 *     const mpi_api *m;
 *     if (!mpi_api_under_launcher()) ... refuse: not started by mpirun
 *     if (mpi_api_init(&m) != SS_OK) ... ss_error_message()
 *     int rank; m->comm_rank(m->comm_world, &rank);
 *     m->allreduce(MPI_API_IN_PLACE, v, n, m->type_float, m->op_sum, m->comm_world);
 *     mpi_api_finalize();
 *
 * Handles follow OpenMPI's ABI: a communicator, datatype, operation, group or request is a
 * pointer (void * here); the predefined ones are the addresses of OpenMPI's objects
 * (ompi_mpi_comm_world, ompi_mpi_float, ompi_mpi_op_sum, ...). Without OpenMPI at configure time
 * (no SS_HAVE_MPI) every load fails with a message saying so. */
#ifndef SS_COMMON_MPI_API_H
#define SS_COMMON_MPI_API_H

#include <stddef.h>

/* OpenMPI's constants (its mpi.h; mpi_api.c checks them against it when it is installed). */
#define MPI_API_IN_PLACE         ((void *)1)
#define MPI_API_STATUS_IGNORE    ((mpi_status *)0)
#define MPI_API_ANY_SOURCE       (-1)
#define MPI_API_ANY_TAG          (-1)
#define MPI_API_THREAD_FUNNELED  1
#define MPI_API_THREAD_MULTIPLE  3
#define MPI_API_UNDEFINED        (-32766)
#define MPI_API_MAX_ERROR_STRING 256

/* OpenMPI's MPI_Status (ompi_status_public_t): the three public fields, then its own two. */
typedef struct mpi_status {
    int source;
    int tag;
    int error;
    int cancelled_;
    size_t ucount_;
} mpi_status;

typedef struct mpi_api {
    int (*init_thread)(int *argc, char ***argv, int required, int *provided);
    int (*initialized)(int *flag);
    int (*finalized)(int *flag);
    int (*finalize)(void);
    int (*abort)(void *comm, int code);
    int (*error_string)(int code, char *text, int *len);
    int (*comm_set_errhandler)(void *comm, void *errhandler);
    int (*comm_rank)(void *comm, int *rank);
    int (*comm_size)(void *comm, int *size);
    int (*comm_split)(void *comm, int color, int key, void **out);
    int (*comm_dup)(void *comm, void **out);
    int (*comm_group)(void *comm, void **group);
    int (*comm_create_group)(void *comm, void *group, int tag, void **out);
    int (*comm_free)(void **comm);
    int (*group_incl)(void *group, int n, const int *ranks, void **out);
    int (*group_free)(void **group);
    int (*barrier)(void *comm);
    int (*allreduce)(const void *send, void *recv, int count, void *type, void *op, void *comm);
    int (*iallreduce)(const void *send, void *recv, int count, void *type, void *op, void *comm,
                      void **request);
    int (*reduce)(const void *send, void *recv, int count, void *type, void *op, int root,
                  void *comm);
    int (*allgather)(const void *send, int scount, void *stype, void *recv, int rcount, void *rtype,
                     void *comm);
    int (*gather)(const void *send, int scount, void *stype, void *recv, int rcount, void *rtype,
                  int root, void *comm);
    int (*gatherv)(const void *send, int scount, void *stype, void *recv, const int *rcounts,
                   const int *displs, void *rtype, int root, void *comm);
    int (*bcast)(void *buf, int count, void *type, int root, void *comm);
    int (*send)(const void *buf, int count, void *type, int dst, int tag, void *comm);
    int (*recv)(void *buf, int count, void *type, int src, int tag, void *comm, mpi_status *st);
    int (*isend)(const void *buf, int count, void *type, int dst, int tag, void *comm,
                 void **request);
    int (*irecv)(void *buf, int count, void *type, int src, int tag, void *comm, void **request);
    int (*probe)(int src, int tag, void *comm, mpi_status *st);
    int (*iprobe)(int src, int tag, void *comm, int *flag, mpi_status *st);
    int (*get_count)(const mpi_status *st, void *type, int *count);
    int (*test)(void **request, int *flag, mpi_status *st);
    int (*wait)(void **request, mpi_status *st);
    int (*waitall)(int n, void **requests, mpi_status *st);
    int (*waitany)(int n, void **requests, int *index, mpi_status *st);
    double (*wtime)(void);
    /* predefined objects */
    void *comm_world, *comm_null, *request_null, *errors_return;
    void *type_float, *type_byte, *type_double, *type_long, *type_int;
    void *op_sum, *op_max, *op_min;
} mpi_api;

/* 1 when mpirun started this process (OMPI_COMM_WORLD_SIZE or PMIX_RANK is set). */
int mpi_api_under_launcher(void);
/* 1 when syncsim was configured with OpenMPI found. */
int mpi_api_compiled(void);
/* Opens libmpi once and fills the table (*out); SS_EIO when it cannot. */
int mpi_api_load(const mpi_api **out);
/* Loads, then initialises MPI once (MPI_THREAD_FUNNELED) unless it already is, and makes errors
 * on MPI_COMM_WORLD (and the communicators made from it) return codes instead of aborting. */
int mpi_api_init(const mpi_api **out);
/* The same at thread level `level` (MPI_API_THREAD_*): SS_EIO when the MPI library provides
 * less, naming the level it gives. */
int mpi_api_init_level(const mpi_api **out, int level);
/* 1 after mpi_api_init succeeded in this process and before mpi_api_finalize. */
int mpi_api_started(void);
/* The thread level MPI provided (MPI_API_THREAD_*) when mpi_api_init started it; -1 otherwise. */
int mpi_api_thread_level(void);
/* MPI_Finalize, once, if mpi_api_init started MPI. */
void mpi_api_finalize(void);
/* SS_EIO with "what: MPI's error string" when code is not MPI_SUCCESS (0); else SS_OK. */
int mpi_api_check(int code, const char *what);

#endif

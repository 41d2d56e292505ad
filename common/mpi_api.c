/* OpenMPI opened at run time (see mpi_api.h). */
#include "common/mpi_api.h"
#include "common/status.h"

#include <stdlib.h>

int mpi_api_under_launcher(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL || getenv("PMIX_RANK") != NULL;
}

#ifndef SS_HAVE_MPI

int mpi_api_compiled(void) {
    return 0;
}

int mpi_api_load(const mpi_api **out) {
    *out = NULL;
    return ss_error_set(SS_EIO, "syncsim was built without OpenMPI (install libopenmpi-dev and "
                                "configure again to run on MPI ranks)");
}

int mpi_api_init(const mpi_api **out) {
    return mpi_api_load(out);
}

int mpi_api_started(void) {
    return 0;
}

void mpi_api_finalize(void) {}

int mpi_api_check(int code, const char *what) {
    return code == 0 ? SS_OK : ss_error_set(SS_EIO, "%s: MPI error %d", what, code);
}

#else
#include <dlfcn.h>
#include <stddef.h>

#if defined(__has_include)
#if __has_include(<mpi.h>)
/* Types and constants only: every call goes through the table. */
#include <mpi.h>
_Static_assert(sizeof(mpi_status) == sizeof(MPI_Status), "MPI_Status layout");
_Static_assert(offsetof(mpi_status, source) == offsetof(MPI_Status, MPI_SOURCE), "MPI_SOURCE");
_Static_assert(offsetof(mpi_status, tag) == offsetof(MPI_Status, MPI_TAG), "MPI_TAG");
_Static_assert(offsetof(mpi_status, error) == offsetof(MPI_Status, MPI_ERROR), "MPI_ERROR");
_Static_assert(MPI_ANY_SOURCE == MPI_API_ANY_SOURCE && MPI_ANY_TAG == MPI_API_ANY_TAG, "ANY");
_Static_assert(MPI_THREAD_FUNNELED == MPI_API_THREAD_FUNNELED, "thread level");
_Static_assert(MPI_THREAD_MULTIPLE == MPI_API_THREAD_MULTIPLE, "thread level");
_Static_assert(MPI_UNDEFINED == MPI_API_UNDEFINED, "MPI_UNDEFINED");
_Static_assert(MPI_MAX_ERROR_STRING == MPI_API_MAX_ERROR_STRING, "error string length");
_Static_assert(sizeof(MPI_Comm) == sizeof(void *) && sizeof(MPI_Request) == sizeof(void *),
               "handles are pointers");
#endif
#endif

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

static mpi_api api;
static void *lib;
static int started;           /* this module called MPI_Init_thread */
static int thread_level = -1; /* what MPI_Init_thread provided (-1: not started here) */

/* Every symbol the table holds, by its offset in mpi_api: entry points and objects alike (a
 * function pointer and an object's address are both stored as the dlsym result). */
#define SYM(field, name)                                                                           \
    { offsetof(mpi_api, field), name }
static const struct {
    size_t offset;
    const char *name;
} symbols[] = {SYM(init_thread, "MPI_Init_thread"),
               SYM(initialized, "MPI_Initialized"),
               SYM(finalized, "MPI_Finalized"),
               SYM(finalize, "MPI_Finalize"),
               SYM(abort, "MPI_Abort"),
               SYM(error_string, "MPI_Error_string"),
               SYM(comm_set_errhandler, "MPI_Comm_set_errhandler"),
               SYM(comm_rank, "MPI_Comm_rank"),
               SYM(comm_size, "MPI_Comm_size"),
               SYM(comm_split, "MPI_Comm_split"),
               SYM(comm_dup, "MPI_Comm_dup"),
               SYM(comm_group, "MPI_Comm_group"),
               SYM(comm_create_group, "MPI_Comm_create_group"),
               SYM(comm_free, "MPI_Comm_free"),
               SYM(group_incl, "MPI_Group_incl"),
               SYM(group_free, "MPI_Group_free"),
               SYM(barrier, "MPI_Barrier"),
               SYM(allreduce, "MPI_Allreduce"),
               SYM(iallreduce, "MPI_Iallreduce"),
               SYM(reduce, "MPI_Reduce"),
               SYM(allgather, "MPI_Allgather"),
               SYM(gather, "MPI_Gather"),
               SYM(gatherv, "MPI_Gatherv"),
               SYM(bcast, "MPI_Bcast"),
               SYM(send, "MPI_Send"),
               SYM(recv, "MPI_Recv"),
               SYM(isend, "MPI_Isend"),
               SYM(irecv, "MPI_Irecv"),
               SYM(probe, "MPI_Probe"),
               SYM(iprobe, "MPI_Iprobe"),
               SYM(get_count, "MPI_Get_count"),
               SYM(test, "MPI_Test"),
               SYM(wait, "MPI_Wait"),
               SYM(waitall, "MPI_Waitall"),
               SYM(waitany, "MPI_Waitany"),
               SYM(wtime, "MPI_Wtime"),
               SYM(comm_world, "ompi_mpi_comm_world"),
               SYM(comm_null, "ompi_mpi_comm_null"),
               SYM(request_null, "ompi_request_null"),
               SYM(errors_return, "ompi_mpi_errors_return"),
               SYM(type_float, "ompi_mpi_float"),
               SYM(type_byte, "ompi_mpi_byte"),
               SYM(type_double, "ompi_mpi_double"),
               SYM(type_long, "ompi_mpi_long"),
               SYM(type_int, "ompi_mpi_int"),
               SYM(op_sum, "ompi_mpi_op_sum"),
               SYM(op_max, "ompi_mpi_op_max"),
               SYM(op_min, "ompi_mpi_op_min")};
#undef SYM

int mpi_api_compiled(void) {
    return 1;
}

static int open_library(void) {
    static const char *const names[] = {SS_MPI_LIBRARY, "libmpi.so.40", "libmpi.so", NULL};
    for (int i = 0; names[i] && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL | SS_MPI_DEEPBIND);
    if (!lib)
        return ss_error_set(SS_EIO,
                            "cannot open OpenMPI's libmpi (%s): install libopenmpi-dev, or run "
                            "without mpirun",
                            dlerror());
    return SS_OK;
}

int mpi_api_load(const mpi_api **out) {
    *out = NULL;
    if (!lib) {
        int rc = open_library();
        if (rc != SS_OK) return rc;
        for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
            void *p = dlsym(lib, symbols[i].name);
            if (!p)
                return ss_error_set(SS_EIO, "the MPI library found is not OpenMPI's (no %s)",
                                    symbols[i].name);
            *(void **)((char *)&api + symbols[i].offset) = p;
        }
    }
    *out = &api;
    return SS_OK;
}

int mpi_api_init(const mpi_api **out) {
    return mpi_api_init_level(out, MPI_API_THREAD_FUNNELED);
}

int mpi_api_init_level(const mpi_api **out, int level) {
    int rc = mpi_api_load(out);
    if (rc != SS_OK) return rc;
    int flag = 0;
    api.initialized(&flag);
    if (!flag) {
        int provided = 0;
        if (api.init_thread(NULL, NULL, level, &provided) != 0)
            return ss_error_set(SS_EIO, "MPI_Init_thread failed");
        started = 1;
        thread_level = provided;
        if (provided < level)
            return ss_error_set(SS_EIO,
                                "MPI_Init_thread: this MPI library gives thread level %d, "
                                "%d is needed",
                                provided, level);
    }
    return mpi_api_check(api.comm_set_errhandler(api.comm_world, api.errors_return),
                         "MPI_Comm_set_errhandler");
}

int mpi_api_started(void) {
    return started;
}

int mpi_api_thread_level(void) {
    return started ? thread_level : -1;
}

void mpi_api_finalize(void) {
    if (started) api.finalize();
    started = 0;
}

int mpi_api_check(int code, const char *what) {
    if (code == 0) return SS_OK;
    char text[MPI_API_MAX_ERROR_STRING] = "";
    int len = 0;
    if (lib && api.error_string(code, text, &len) != 0) text[0] = '\0';
    return ss_error_set(SS_EIO, "%s: %s (MPI error %d)", what, text[0] ? text : "unknown", code);
}
#endif

/* One simulation per process: runs a whole SimGrid simulation in a forked child and brings its
 * result back as bytes.
 *
 * Why: SimGrid 3.32 creates its engine once per process. A second simgrid_init() +
 * simgrid_load_platform() aborts ("Refusing to create a second NetZone"), the network model cannot
 * change after initialization, the clock never goes back to 0, and the C API has no way to destroy
 * the engine. So anything that runs several simulations (test suites, `compare`, `bench`, sweeps)
 * runs each one through sim_run_isolated(); a program that runs exactly one simulation may call
 * sim_cluster_open() directly.
 *
 *     static int one_run(void *arg, sim_blob *result) {      // runs in the child
 *         sim_cluster *c; int st = sim_cluster_open(arg, &c); if (st) return st;
 *         ... spawn actors, sim_cluster_run(c, &end_s) ...
 *         sim_blob_append(result, &end_s, sizeof end_s);
 *         sim_cluster_close(c); return SS_OK;
 *     }
 *     sim_blob out = {0};
 *     int st = sim_run_isolated(one_run, &opts, &out);        // in the parent
 *     if (st != SS_OK) fprintf(stderr, "syncsim: %s\n", ss_error_message());
 *     ... read out.data (out.bytes) ...; sim_blob_free(&out);
 *
 * The child's status and ss_error_message() come back to the parent as they were set in the
 * child. A child that dies (SimGrid abort, signal, exit without reporting) gives SS_EIO with a
 * message naming the signal or exit code; SimGrid's own text is on stderr above it.
 */
#ifndef SS_SIM_ISOLATE_H
#define SS_SIM_ISOLATE_H

#include <stddef.h>

/* A growable byte buffer: the result of one isolated simulation. Zero-initialize before use. */
typedef struct sim_blob {
    unsigned char *data; /* (bytes) */
    size_t bytes;        /* used */
    size_t cap_bytes;    /* allocated */
} sim_blob;

void sim_blob_append(sim_blob *b, const void *data, size_t bytes);
void sim_blob_free(sim_blob *b); /* frees data and zeroes the struct */

/* The simulation to run in the child: returns a status (ss_error_set on failure) and appends its
 * result to `result`. It may create the SimGrid engine (sim_cluster_open) exactly once. */
typedef int (*sim_isolated_fn)(void *arg, sim_blob *result);

/* Forks, runs fn(arg, result) in the child, and returns its status; `result` receives the
 * child's bytes (appended). stdout/stderr are flushed before the fork and by the child before it
 * exits, so output written by the child to inherited streams appears once, in order. */
int sim_run_isolated(sim_isolated_fn fn, void *arg, sim_blob *result);

#endif

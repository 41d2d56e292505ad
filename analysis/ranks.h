/* Sweep points spread over MPI ranks. Built with MPI when CMake finds it (SS_HAVE_MPI); MPI is
 * initialized only when the process was launched by mpirun (OMPI_COMM_WORLD_SIZE or PMI_SIZE in
 * the environment), so the same binary runs alone without it. Rank r runs the points
 * i = r (mod size); rank 0 gathers after ranks_barrier().
 *
 *     int rank, size; ranks_init(&rank, &size); ... ranks_barrier(); ... ranks_finalize();
 */
#ifndef SS_ANALYSIS_RANKS_H
#define SS_ANALYSIS_RANKS_H

/* 1 if this build has MPI. */
int ranks_compiled_with_mpi(void);
/* Rank and size: (0, 1) without mpirun. SS_EIO if MPI fails to start. */
int ranks_init(int *rank, int *size);
/* Waits for every rank (no-op without MPI). */
void ranks_barrier(void);
/* Sums an int over the ranks, for every rank (identity without MPI). */
int ranks_sum(int value);
/* Ends MPI if ranks_init started it. */
void ranks_finalize(void);

#endif

/* The compute engine: the workers' real computation as futures. A worker hands the engine one
 * task (a replica's forward and backward passes and the norms a policy reads), lets its simulated
 * compute time pass, and takes the result when it needs it; workers that compute at the same
 * simulated time therefore compute at the same wall time, on a pool of threads.
 *
 *     engine *en; engine_create(threads, &en);
 *     engine_task t = {.run = fn, .arg = job};
 *     engine_submit(en, &t);      // runs fn(job, slot) on some thread, slot in [0, threads)
 *     ...                         // the simulation goes on
 *     engine_wait(en, &t);        // returns once fn returned
 *     engine_destroy(en);
 *
 * A task touches only its own replica (and the per-slot scratch its slot names), so its results
 * are the same bits whichever thread runs it and whatever runs beside it: a run gives the same
 * outputs for any thread count. With one thread the engine starts none: submit runs the task at
 * once in the caller, as the code did before there was an engine.
 *
 * The interface is what a backend elsewhere would also take: a task is submitted, and later
 * waited for, and the caller reads only what the task wrote into its own job. */
#ifndef SS_COMMON_ENGINE_H
#define SS_COMMON_ENGINE_H

#define ENGINE_MAX_THREADS 1024

typedef struct engine engine;

typedef struct engine_task {
    void (*run)(void *arg, int slot); /* slot: the thread's index, 0 .. threads - 1 (the
                                         caller's, in engine_wait: threads - 1) */
    void *arg;
    const char *name; /* engine_trace: what it is (a string that outlives the engine; NULL:
                         "task") */
    int id;           /* engine_trace: which one (a worker, a chunk; < 0: none) */
    int home;         /* 1 + the slot that should run it, modulo the threads (a replica's: its
                         data then stays in one core's caches); 0: any. Another thread takes it
                         only while that slot's thread is busy (SYNCSIM_ENGINE_HOMES=0: every
                         task in queue order, for comparison) */
    /* the engine's */
    struct engine_task *next;
    int state; /* 0 idle, 1 queued, 2 running, 3 done */
} engine_task;

/* `threads` threads that compute: a pool of threads - 1, and the caller, which runs queued tasks
 * while it waits in engine_wait (1: no pool; tasks run in the caller when submitted). One thread
 * submits and waits. SS_EUSAGE outside [1, ENGINE_MAX_THREADS]; SS_ENOMEM when a thread cannot
 * start. */
int engine_create(int threads, engine **out);
void engine_destroy(engine *en); /* waits for the tasks queued */
int engine_threads(const engine *en);
/* Queues t (idle or done); with one thread, runs it now. */
void engine_submit(engine *en, engine_task *t);
/* Returns once t has run (at once for a task never submitted or already waited for); until
 * then the caller runs the queue's tasks itself, t or others, in slot threads - 1. */
void engine_wait(engine *en, engine_task *t);
/* Takes t back out of the queue if no thread has started it: returns 1 (t will not run, and is
 * idle again), else 0 (it runs or has run: engine_wait for it). */
int engine_cancel(engine *en, engine_task *t);

/* The engine's timeline: from engine_trace_start on, every task's run (its slot, name, id, start
 * and end) and the spans that engine_trace_span adds; engine_trace_write writes them as a Chrome
 * trace (JSON, "X" events in microseconds, one row a slot: chrome://tracing, ui.perfetto.dev),
 * through a temporary file. A slot keeps at most ENGINE_TRACE_MAX_EVENTS events; those past it
 * are counted (otherData.dropped) and not kept. Recording costs two clock reads a task. */
#define ENGINE_TRACE_MAX_EVENTS (1 << 20)
void engine_trace_start(engine *en);
/* A span [t0_s, t1_s] (engine_now_s) of slot `slot` that is not a task: the caller's share of
 * split work, a part of a task. Only the slot's own thread adds to it. */
void engine_trace_span(engine *en, int slot, const char *name, int id, double t0_s, double t1_s);
int engine_trace_write(const engine *en, const char *path);
/* The clock of the timeline: CLOCK_MONOTONIC, seconds. */
double engine_now_s(void);

/* The cores of this machine (sysconf), at least 1. */
int engine_cores(void);
/* The online CPUs under a sysfs cpu directory (/sys/devices/system/cpu) and the physical cores
 * they sit on (distinct physical_package_id and core_id pairs): two hardware threads of one core
 * count once. Returns the physical count, 0 when the topology cannot be read; *logical (may be
 * NULL) gets the CPUs counted. */
int engine_physical_cores(const char *sysfs_cpu_dir, int *logical);
/* compare and sweep run `jobs` runs at once: from now on, in this process and the runs it starts,
 * --threads auto takes cores / jobs (at least 1) instead of every core. */
void engine_share_cores(int jobs);
/* --threads: "auto" (every core, or its share under engine_share_cores) or 1 .. 1024. SS_EUSAGE
 * with a message naming the option and the valid values otherwise. */
int engine_parse_threads(const char *text, int *threads);

#endif

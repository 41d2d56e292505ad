/* sim_run_isolated: fork, run, pipe the status, message and result back (see isolate.h). */
#include "sim/isolate.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/status.h"

/* What the child writes first, then msg_bytes of message, then blob_bytes of result. */
typedef struct isolate_header {
    uint32_t magic;
    int32_t status;
    uint64_t msg_bytes;
    uint64_t blob_bytes;
} isolate_header;

#define ISOLATE_MAGIC 0x53494d31u /* "SIM1" */

void sim_blob_append(sim_blob *b, const void *data, size_t bytes) {
    SS_ASSERT(b != NULL && (data != NULL || bytes == 0));
    if (b->bytes + bytes > b->cap_bytes) {
        size_t cap = b->cap_bytes ? b->cap_bytes : 256;
        while (cap < b->bytes + bytes)
            cap *= 2;
        unsigned char *p = realloc(b->data, cap);
        SS_ASSERT(p != NULL);
        b->data = p;
        b->cap_bytes = cap;
    }
    if (bytes) memcpy(b->data + b->bytes, data, bytes);
    b->bytes += bytes;
}

void sim_blob_free(sim_blob *b) {
    if (!b) return;
    free(b->data);
    memset(b, 0, sizeof *b);
}

static int write_all(int fd, const void *data, size_t bytes) {
    const unsigned char *p = data;
    while (bytes > 0) {
        ssize_t n = write(fd, p, bytes);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        bytes -= (size_t)n;
    }
    return 0;
}

static void child_main(int fd, sim_isolated_fn fn, void *arg) {
    sim_blob result = {0};
    int status = fn(arg, &result);
    const char *msg = status == SS_OK ? "" : ss_error_message();
    isolate_header h = {ISOLATE_MAGIC, status, strlen(msg), result.bytes};
    fflush(NULL);
    int bad = write_all(fd, &h, sizeof h) || write_all(fd, msg, h.msg_bytes) ||
              write_all(fd, result.data, result.bytes);
    close(fd);
    /* _exit: SimGrid's engine and atexit handlers of the parent's state must not run twice. */
    _exit(bad ? 3 : 0);
}

int sim_run_isolated(sim_isolated_fn fn, void *arg, sim_blob *result) {
    SS_ASSERT(fn != NULL && result != NULL);
    int fds[2];
    if (pipe(fds) != 0)
        return ss_error_set(SS_EIO, "simulation: cannot create a pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return ss_error_set(SS_EIO, "simulation: cannot fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        child_main(fds[1], fn, arg);
    }
    close(fds[1]);
    sim_blob raw = {0};
    unsigned char buf[65536];
    for (;;) {
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        sim_blob_append(&raw, buf, (size_t)n);
    }
    close(fds[0]);
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    int st;
    isolate_header h;
    if (WIFSIGNALED(wstatus)) {
        int sig = WTERMSIG(wstatus);
        st = ss_error_set(
            SS_EIO, "simulation process killed by signal %d (%s)%s", sig, strsignal(sig),
            sig == SIGABRT ? ": SimGrid or an assertion aborted, see the message above" : "");
    } else if (raw.bytes < sizeof h) {
        st = ss_error_set(SS_EIO, "simulation process exited with code %d without a result",
                          WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
    } else {
        memcpy(&h, raw.data, sizeof h);
        if (h.magic != ISOLATE_MAGIC || raw.bytes != sizeof h + h.msg_bytes + h.blob_bytes) {
            st = ss_error_set(SS_EIO, "simulation process sent a truncated result (%zu bytes)",
                              raw.bytes);
        } else {
            st = h.status;
            if (st != SS_OK)
                ss_error_set(st, "%.*s", (int)h.msg_bytes, (const char *)raw.data + sizeof h);
            sim_blob_append(result, raw.data + sizeof h + h.msg_bytes, h.blob_bytes);
        }
    }
    sim_blob_free(&raw);
    return st;
}

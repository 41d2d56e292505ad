/* mpi_probe: times one MPI_Allreduce of floats and says where each rank runs.
 *
 *   mpirun -np N mpi_probe [BYTES]     (BYTES: the buffer, default 25000000)
 *
 * Every rank prints one line, in rank order through rank 0:
 *   rank R netns NAME inode net:[I] addr A
 * (NAME from `ip netns identify`, "-" when the rank runs in no named namespace; A the rank's first
 * non-loopback IPv4 address, "-" if none), then rank 0 prints
 *   allreduce_s=T bytes=B ranks=N
 * where T is the slowest rank's time of the timed all-reduce. A small all-reduce before it opens
 * the TCP connections, so T is the transfer, not the connection set-up.
 *
 * It calls MPI directly and links OpenMPI only (no SimGrid in this program). Used by
 * tests/test_testbed.sh to check that scripts/testbed.sh places ranks in distinct namespaces and
 * shapes their links. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { PROBE_LINE_LEN = 256 };

/* The name `ip netns identify` gives this process's network namespace, or "-". */
static void probe_netns_name(char *name, size_t len) {
    snprintf(name, len, "-");
    FILE *p = popen("ip netns identify 2>/dev/null", "r");
    if (p == NULL) return;
    char buf[128];
    if (fgets(buf, sizeof buf, p) != NULL) {
        buf[strcspn(buf, "\n")] = '\0';
        if (buf[0] != '\0') snprintf(name, len, "%s", buf);
    }
    pclose(p);
}

/* The first IPv4 address of an interface that is up and not loopback, or "-". */
static void probe_address(char *addr, size_t len) {
    snprintf(addr, len, "-");
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0) return;
    for (struct ifaddrs *it = list; it != NULL; it = it->ifa_next) {
        if (it->ifa_addr == NULL || it->ifa_addr->sa_family != AF_INET) continue;
        if ((it->ifa_flags & IFF_LOOPBACK) || !(it->ifa_flags & IFF_UP)) continue;
        const struct sockaddr_in *sin = (const struct sockaddr_in *)it->ifa_addr;
        if (inet_ntop(AF_INET, &sin->sin_addr, addr, (socklen_t)len) != NULL) break;
    }
    freeifaddrs(list);
}

/* Gathers every rank's "where" line to rank 0, which prints them in rank order. */
static void probe_report_places(int rank, int size) {
    char name[128], addr[64], inode[64] = "-", line[PROBE_LINE_LEN];
    probe_netns_name(name, sizeof name);
    probe_address(addr, sizeof addr);
    ssize_t n = readlink("/proc/self/ns/net", inode, sizeof inode - 1);
    inode[n > 0 ? n : 1] = '\0';
    snprintf(line, sizeof line, "rank %d netns %s inode %s addr %s", rank, name, inode, addr);
    char *all = rank == 0 ? malloc((size_t)size * PROBE_LINE_LEN) : NULL;
    MPI_Gather(line, PROBE_LINE_LEN, MPI_CHAR, all, PROBE_LINE_LEN, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            printf("%s\n", all + (size_t)r * PROBE_LINE_LEN);
        free(all);
    }
}

/* Parses BYTES (argv[1]) into a count of floats; 0 on a bad value. */
static long probe_count(int argc, char **argv) {
    long long bytes = 25000000;
    if (argc > 1) {
        char *end = NULL;
        bytes = strtoll(argv[1], &end, 10);
        if (end == argv[1] || *end != '\0' || bytes < (long long)sizeof(float) || bytes > 1LL << 31)
            return 0;
    }
    return (long)(bytes / (long long)sizeof(float));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long count = probe_count(argc, argv);
    if (count == 0) {
        if (rank == 0)
            fprintf(stderr, "mpi_probe: BYTES '%s': expected an integer from 4 to 2^31\n", argv[1]);
        MPI_Finalize();
        return 2;
    }
    probe_report_places(rank, size);
    float *send = malloc((size_t)count * sizeof(float));
    float *recv = malloc((size_t)count * sizeof(float));
    if (send == NULL || recv == NULL) {
        fprintf(stderr, "mpi_probe: rank %d: out of memory for %ld floats\n", rank, count);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 0; i < count; i++)
        send[i] = (float)(rank + 1);
    MPI_Allreduce(send, recv, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); /* opens the connections */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0_s = MPI_Wtime();
    MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double elapsed_s = MPI_Wtime() - t0_s, slowest_s = 0.0;
    MPI_Reduce(&elapsed_s, &slowest_s, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    /* the sum of (r + 1) over the ranks, exact in float for any realistic size */
    int ok = recv[0] == (float)size * (float)(size + 1) / 2.0f && recv[count - 1] == recv[0];
    if (rank == 0)
        printf("allreduce_s=%.6f bytes=%lld ranks=%d sum_ok=%d\n", slowest_s,
               (long long)count * (long long)sizeof(float), size, ok);
    free(send);
    free(recv);
    MPI_Finalize();
    return ok ? 0 : 1;
}

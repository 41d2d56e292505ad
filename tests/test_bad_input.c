/* CUnit suite of bad and hostile inputs to every subcommand, run as a user runs the program
 * (build/syncsim as a child process). Every case is a row: the arguments, the exit code (2 usage,
 * 1 runtime) and a fragment the message must hold (the option, file or line, and what would be
 * valid). After every case the outputs of an earlier good run (@G) must be untouched, and no
 * temporary file may be left in the scratch directory.
 *
 * Most rows are generated from the option table (options_row_at): each option's bad values by its
 * kind (integers, reals, choices, bandwidths, times...), its value missing, a misspelling, and the
 * option given to a subcommand that does not take it; the rest are written by hand for files,
 * platforms, reports and combinations. Cases run two at a time: about 0.1 s each, mostly the
 * loading of the program's libraries. Interruptions (SIGINT, SIGTERM, SIGHUP) have tests of
 * their own, which wait for a line of output before they signal.
 *
 * Placeholders in the arguments: @T the scratch directory, @G the good run's output directory,
 * @S the source tree. */
#define _GNU_SOURCE /* memmem */
#include "ss_test.h"
#include "cli/options.h"

#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmp_dir[256], good_dir[300];

/* The good run's files, as they were after it. */
#define GOOD_FILES 5
static const char *const good_names[GOOD_FILES] = {"config.ini", "metrics.csv", "platform.xml",
                                                   "steps.trace", "summary.json"};
static char *good_text[GOOD_FILES];
static size_t good_len[GOOD_FILES];

static int cases_run, cases_passed;

typedef struct bad_case {
    const char *args; /* after "syncsim " */
    int code;         /* expected exit code */
    const char *frag; /* expected in the output (NULL: any) */
} bad_case;

static char *read_all(const char *path, size_t *len) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    size_t cap = 1 << 16, n = 0, k;
    char *buf = malloc(cap);
    while ((k = fread(buf + n, 1, cap - n, fp)) > 0) {
        n += k;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(fp);
    *len = n;
    return buf;
}

/* 1 when the good run's files are all there, as they were. */
static int good_untouched(char *why, size_t n) {
    char path[600];
    for (int i = 0; i < GOOD_FILES; i++) {
        snprintf(path, sizeof path, "%s/%s", good_dir, good_names[i]);
        size_t len = 0;
        char *text = read_all(path, &len);
        int same = text && len == good_len[i] && memcmp(text, good_text[i], len) == 0;
        free(text);
        if (!same) {
            snprintf(why, n, "%s changed or removed", path);
            return 0;
        }
    }
    return 1;
}

/* Writes the good run's files back, so that one failed case does not fail the next ones. */
static void restore_good(void) {
    char path[600];
    for (int i = 0; i < GOOD_FILES; i++) {
        snprintf(path, sizeof path, "%s/%s", good_dir, good_names[i]);
        FILE *fp = fopen(path, "wb");
        if (!fp) continue;
        fwrite(good_text[i], 1, good_len[i], fp);
        fclose(fp);
    }
}

/* 1 when no "*.tmp.*" file is left under dir (recursively). */
static int no_tmp_files(const char *dir, char *why, size_t n) {
    DIR *d = opendir(dir);
    if (!d) return 1;
    struct dirent *e;
    int ok = 1;
    while (ok && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode))
            ok = no_tmp_files(path, why, n);
        else if (strstr(e->d_name, ".tmp.")) {
            snprintf(why, n, "temporary file %s left behind", path);
            unlink(path);
            ok = 0;
        }
    }
    closedir(d);
    return ok;
}

/* args with the placeholders replaced. */
static void expand(const char *args, char *out, size_t n) {
    size_t len = 0;
    for (const char *p = args; *p && len + 1 < n; p++) {
        const char *sub = NULL;
        if (p[0] == '@' && p[1] == 'T') sub = tmp_dir;
        if (p[0] == '@' && p[1] == 'G') sub = good_dir;
        if (p[0] == '@' && p[1] == 'S') sub = SS_SOURCE_DIR;
        if (sub) {
            len += (size_t)snprintf(out + len, n - len, "%s", sub);
            p++;
        } else {
            out[len++] = *p;
        }
    }
    out[len < n ? len : n - 1] = '\0';
}

/* Reads a child's whole output and its exit code (-1: it did not exit). */
static int finish(FILE *p, char **output) {
    size_t cap = 1 << 14, len = 0, n;
    char *buf = malloc(cap);
    while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0)
        if ((len += n) + 4096 > cap) buf = realloc(buf, cap *= 2);
    buf[len] = '\0';
    int status = pclose(p);
    *output = buf;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Starts one case: its expanded arguments in args, its output to come through the pipe. */
static FILE *start(const bad_case *c, char *args, size_t n) {
    char cmd[4700];
    expand(c->args, args, n);
    /* no terminal input, and a bound on time: a case that hangs is a failure, not a stuck suite */
    snprintf(cmd, sizeof cmd, "cd %s && exec timeout -s KILL 120 %s/syncsim %s </dev/null 2>&1",
             tmp_dir, SS_BINARY_DIR, args);
    fflush(NULL);
    return popen(cmd, "r");
}

/* Whether a finished case behaved: exit code, message. */
static int judge(const bad_case *c, int rc, const char *out, char *why, size_t n) {
    if (rc != c->code) {
        snprintf(why, n, "exit %d, expected %d", rc, c->code);
        return 0;
    }
    char frag[600] = "";
    if (c->frag) expand(c->frag, frag, sizeof frag);
    if (c->frag && !strstr(out, frag)) {
        snprintf(why, n, "the message lacks '%s'", frag);
        return 0;
    }
    if (strstr(out, "syncsim: ") == NULL && c->code != 0) {
        snprintf(why, n, "no 'syncsim: ' message");
        return 0;
    }
    return 1;
}

/* Runs the cases two at a time (each is a process that mostly loads its libraries: ~0.1 s);
 * after each pair the good run's files must be untouched (else put back) and no temporary file
 * left. Every failure is printed with its output. */
static void run_cases(const bad_case *cases, int n) {
    int failed = 0;
    for (int i = 0; i < n; i += 2) {
        const int m = i + 1 < n ? 2 : 1;
        char args[2][4096], why[2][1300] = {"", ""}, *out[2];
        FILE *p[2];
        int ok[2];
        for (int k = 0; k < m; k++)
            p[k] = start(&cases[i + k], args[k], sizeof args[k]);
        for (int k = 0; k < m; k++) {
            int rc = p[k] ? finish(p[k], &out[k]) : -1;
            if (!p[k]) out[k] = strdup("");
            ok[k] = judge(&cases[i + k], rc, out[k], why[k], sizeof why[k]);
        }
        char shared[1300] = "";
        if (!good_untouched(shared, sizeof shared))
            restore_good();
        else
            no_tmp_files(tmp_dir, shared, sizeof shared);
        for (int k = 0; k < m; k++) {
            if (shared[0] && ok[k]) {
                snprintf(why[k], sizeof why[k], "%s (this case or the one run beside it)", shared);
                ok[k] = 0;
            }
            if (!ok[k])
                fprintf(stderr, "\n  syncsim %s\n  %s; output:\n%.2000s\n", args[k], why[k],
                        out[k]);
            free(out[k]);
            failed += !ok[k];
            cases_passed += ok[k];
            cases_run++;
        }
    }
    printf("  (%d cases, %d passed) ", n, n - failed);
    CU_ASSERT_EQUAL(failed, 0);
}

static int suite_init(void) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/ss_test_bad_XXXXXX");
    if (!mkdtemp(tmp_dir)) return 1;
    snprintf(good_dir, sizeof good_dir, "%s/good", tmp_dir);
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "%s/syncsim train --policy bsp --workers 8 --dataset synthetic --epochs 0.01 --out "
             "%s >/dev/null 2>&1",
             SS_BINARY_DIR, good_dir);
    if (system(cmd) != 0) return 1;
    for (int i = 0; i < GOOD_FILES; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", good_dir, good_names[i]);
        if (!(good_text[i] = read_all(path, &good_len[i]))) return 1;
    }
    return 0;
}

static int suite_clean(void) {
    for (int i = 0; i < GOOD_FILES; i++)
        free(good_text[i]);
    printf("\n  bad inputs: %d cases, %d passed\n", cases_run, cases_passed);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    return system(cmd) == 0 ? 0 : 1;
}

#define RUN8 "train --policy bsp --workers 8 --dataset synthetic --epochs 0.01 --out @G "

/* Usage errors that need the options together (or the data set) are found before OUT is
 * touched; an input that is one of OUT's files is refused, never deleted. */
static const bad_case late_usage[] = {
    {RUN8 "--nodes 3", 2, "--nodes 3"},
    {RUN8 "--nodes 2 --nics-per-node 8", 2, "--nics-per-node"},
    {RUN8 "--collective hier", 2, "--collective hier"},
    {RUN8 "--nodes 2 --intra pcie3 --p2p off", 2, "--p2p off"},
    {RUN8 "--partition noniid:20", 2, "--partition noniid:20"},
    {RUN8 "--dump-gradients 5000", 2, "--dump-gradients"},
    {RUN8 "--platform @G/steps.trace", 2, "an output this run replaces"},
    {RUN8 "--platform @G/summary.json", 2, "an output this run replaces"},
    {RUN8 "--platform @G/metrics.csv", 2, "an output this run replaces"},
    {"compare --partition noniid:20 --dataset synthetic --workers 2 --out @G", 2,
     "--partition noniid:20: labels per worker must be 1..10"},
    {"compare --dataset @T/nowhere --workers 2 --out @G", 2, "unknown data set"},
};

static void test_late_usage(void) {
    run_cases(late_usage, (int)(sizeof late_usage / sizeof late_usage[0]));
}

/* Runs a shell command in the scratch directory; its exit code, its output in *out. */
static int shell_in_tmp(const char *script, char **out) {
    char cmd[8192], text[3800];
    expand(script, text, sizeof text);
    snprintf(cmd, sizeof cmd, "cd %s && S=%s/syncsim && ( %s ) 2>&1", tmp_dir, SS_BINARY_DIR, text);
    int rc = ss_test_shell(cmd, out);
    if (rc != 0) fprintf(stderr, "\n  %s\n  exit %d, output:\n%.3000s\n", text, rc, *out);
    return rc;
}

/* compare: platform files of the same base name get directories of their own (the shipped
 * references are all platform.xml), a point listed twice is refused, and a re-run into the same
 * --out leaves none of the earlier runs or figures: report then counts this compare's runs. */
static void test_compare_dirs(void) {
    char *out = NULL;
    const char *common = "--workers 2 --dataset synthetic --epochs 0.01 --jobs 2 --partitions iid";
    char script[2048];
    snprintf(
        script, sizeof script,
        "mkdir -p na nb && $S platform --hosts 2 > na/platform.xml && $S platform --hosts 2 "
        "--bandwidth 5Gbps > nb/platform.xml && $S compare %s --policies bsp,ssp "
        "--networks 5Gbps,100Gbps --out cmp >/dev/null && $S report cmp --out cmp/rep "
        ">/dev/null && $S compare %s --policies bsp --networks na/platform.xml,nb/platform.xml "
        "--out cmp >/dev/null && ls cmp/runs && cut -d, -f1,2 cmp/compare.csv && $S report "
        "cmp --out cmp/rep && ls cmp/rep",
        common, common);
    CU_ASSERT_EQUAL_FATAL(shell_in_tmp(script, &out), 0);
    CU_ASSERT(strstr(out, "bsp-5Gbps") == NULL); /* the earlier compare's runs are gone */
    CU_ASSERT(strstr(out, "ssp-100Gbps") == NULL);
    CU_ASSERT(strstr(out, "bsp,platform\n") != NULL);
    CU_ASSERT(strstr(out, "bsp,nb-platform\n") != NULL);
    CU_ASSERT(strstr(out, "syncsim report: 2 runs") != NULL);
    CU_ASSERT(strstr(out, "timeline-3") == NULL); /* the earlier report had more figures */
    free(out);
}

/* A diverged run (exit 3) writes empty cells in metrics.csv where printf would write inf or nan
 * (the losses overflow, and their exp, the perplexity), and nan or inf only in the trace's
 * grad_norm, delta and loss: report and replay read what it wrote (report refused its 'inf'). */
static void test_diverged_outputs(void) {
    char *out = NULL;
    CU_ASSERT_EQUAL_FATAL(
        shell_in_tmp(
            "$S train --model mlp:16 --dataset synthetic --workers 2 --policy bsp --lr 100 "
            "--epochs 0.5 --eval-every 2 --progress no --out dv >/dev/null 2>&1; "
            "echo train=$?; grep -q ',$' dv/metrics.csv && ! grep -i -E 'inf|nan' "
            "dv/metrics.csv && grep -v '^#' dv/steps.trace | grep -c inf && $S report dv "
            "--out dv/rep >/dev/null && $S replay --trace dv/steps.trace --out dv/rp",
            &out),
        0);
    CU_ASSERT(strstr(out, "train=3\n") != NULL);
    CU_ASSERT(strstr(out, "relative difference 0\n") != NULL);
    free(out);
}

static const bad_case compare_twice[] = {
    {"compare --policies bsp,bsp --workers 2 --out @G", 2, "'bsp' is listed twice"},
    {"compare --networks 5Gbps,5Gbps --workers 2 --out @G", 2, "'5Gbps' is listed twice"},
    {"compare --partitions iid,iid --workers 2 --out @G", 2, "'iid' is listed twice"},
    {"compare --partitions iid,,noniid:2 --workers 2 --out @G", 2, "--partitions 'iid,,noniid:2'"},
    {"compare --partitions iid,noniid:20 --dataset synthetic --workers 2 --out @G", 2,
     "--partition noniid:20: labels per worker must be 1..10"},
};

static void test_compare_twice(void) {
    run_cases(compare_twice, (int)(sizeof compare_twice / sizeof compare_twice[0]));
}

/* Writes an IDX file of unsigned bytes: dims (n, ...) then data. */
static void write_idx(const char *name, int n_dims, const unsigned *dims, const unsigned char *data,
                      size_t bytes) {
    char path[600];
    snprintf(path, sizeof path, "%s/idx/%s", tmp_dir, name);
    FILE *fp = fopen(path, "wb");
    CU_ASSERT_FATAL(fp != NULL);
    unsigned char head[4] = {0, 0, 8, (unsigned char)n_dims};
    fwrite(head, 1, 4, fp);
    for (int i = 0; i < n_dims; i++) {
        unsigned char d[4] = {(unsigned char)(dims[i] >> 24), (unsigned char)(dims[i] >> 16),
                              (unsigned char)(dims[i] >> 8), (unsigned char)dims[i]};
        fwrite(d, 1, 4, fp);
    }
    fwrite(data, 1, bytes, fp);
    fclose(fp);
}

/* An IDX set of 200 training images of 10 classes where one label byte is 200. */
static void make_corrupt_idx(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/idx", tmp_dir);
    mkdir(dir, 0777);
    enum { N = 200, T = 20, PX = 28 * 28 };
    static unsigned char px[N * PX], labels[N];
    for (size_t i = 0; i < sizeof px; i++)
        px[i] = (unsigned char)(i * 2654435761u >> 24);
    for (int i = 0; i < N; i++)
        labels[i] = (unsigned char)(i % 10);
    labels[17] = 200;
    const unsigned train[3] = {N, 28, 28}, train_l[1] = {N}, test[3] = {T, 28, 28}, test_l[1] = {T};
    write_idx("train-images-idx3-ubyte", 3, train, px, sizeof px);
    write_idx("train-labels-idx1-ubyte", 1, train_l, labels, N);
    write_idx("t10k-images-idx3-ubyte", 3, test, px, (size_t)T * PX);
    labels[17] = 7;
    write_idx("t10k-labels-idx1-ubyte", 1, test_l, labels, T);
}

/* Fixtures the rows name: bad configuration files, a directory, platform files. */
static void make_fixtures(void) {
    char script[3000];
    snprintf(script, sizeof script,
             "mkdir -p dir && printf '[trian]\\nepochs = 1\\n' > section.ini && "
             "printf '[train]\\nhelp = true\\n' > help.ini && "
             "printf '[train]\\nconfig = x.ini\\n' > config.ini && "
             "printf '[train]\\nmodel = ml\\0p\\n' > nul.ini && "
             "printf '[train]\\nepochs 5\\n' > malformed.ini && "
             "printf '[train]\\npolicy = bsp\\nstaleness = 3\\n' > policy.ini && "
             "printf '[train]\\npolicy = fedavg\\nlocal-steps = 4\\nlocal-epochs = 1\\n' > "
             "fedavg.ini && "
             "printf '[train]\\npolicy = bsp\\nplatform = x.xml\\nbandwidth = 5Gbps\\n' > "
             "contra.ini && "
             "head -c 1000000 /dev/zero | tr '\\0' a | sed 's/^/model = /' > long.ini && "
             "$S platform --hosts 8 > plain.xml && "
             "printf '\\357\\273\\277' > bom.xml && cat plain.xml >> bom.xml && "
             "sed 's/$/\\r/' bom.xml > bomcrlf.xml && "
             "sed 's/bw=\"[^\"]*\"/bw=\"0x10Gbps\"/' plain.xml > hexbw.xml && "
             "sed 's/speed=\"[^\"]*\"/speed=\"0x1p4Tf\"/' plain.xml > hexspeed.xml && "
             "sed 's/lat=\"[^\"]*\"/lat=\"0x0\"/' plain.xml > hexlat.xml && "
             "sed 's/value=\"v100\"/value=\"tpu9000\"/' plain.xml > tpu.xml");
    char *out = NULL;
    CU_ASSERT_EQUAL_FATAL(shell_in_tmp(script, &out), 0);
    free(out);
}

/* Configuration files: special files refused by type, limits on size and lines, every problem
 * with the file and line. */
static const bad_case config_files[] = {
    {"train --config /dev/zero --out @G", 2, "--config /dev/zero: a character device"},
    {"train --workers 2 --framework jax --out @G", 2, "expected one of eager|graphs|ideal"},
    {"replay --trace /dev/null --framework eager --out @G", 2,
     "--compute, --precision and --framework are for --profile"},
    {"train --config /dev/urandom --out @G", 2, "--config /dev/urandom: a character device"},
    {"train --config @T/dir --out @G", 2, "a directory, not a file"},
    {"train --config @T/nowhere.ini --out @G", 2, "nowhere.ini: cannot open"},
    {"train --config @T/section.ini --out @G", 2, "section.ini:1: unknown section [trian]"},
    {"train --config @T/help.ini --out @G", 2, "help.ini:2: key 'help' belongs on the command"},
    {"train --config @T/config.ini --out @G", 2, "config.ini:2: key 'config' belongs on the"},
    {"train --config @T/nul.ini --out @G", 2, "nul.ini:2: a NUL byte"},
    {"train --config @T/long.ini --out @G", 2, "long.ini:1: line too long"},
    {"train --config @T/malformed.ini --out @G", 2, "malformed.ini:2: malformed line"},
    {"train --config @T/policy.ini --out @G", 2, "policy.ini:3: key 'staleness' does not apply"},
    {"train --config @T/fedavg.ini --out @G", 2, "give one (@T/fedavg.ini:4: key 'local-epochs')"},
    {"train --config @T/contra.ini --out @G", 2, "contradicts"},
    {"train --config @T/contra.ini --out @G", 2, "(@T/contra.ini:3: key 'platform')"},
    {"replay --config /dev/zero --out @G", 2, "a character device"},
    {"compare --config @T/dir --out @G", 2, "a directory, not a file"},
    {"sweep @T/dir", 2, "a directory, not a file"},
    {"sweep /dev/zero", 2, "a character device"},
    {"sweep --jobs 2 @T/nowhere.ini", 2, "sweep file @T/nowhere.ini: cannot open"},
    {"sweep @T/a.ini @T/b.ini", 2, "sweep takes one sweep file"},
    {"real --bogus", 2, "unknown option --bogus for 'syncsim real'"},
    {"validate compute --throughputs /dev/zero", 1, "CSV file /dev/zero: a character device"},
    {"validate compute --throughputs @T/dir", 1, "CSV file @T/dir: a directory"},
    {"validate network --references /dev/zero", 1, "/dev/zero"},
    {"report @T/dir", 1, "no run found"},
};

#define PLAT "train --policy bsp --workers 8 --dataset synthetic --epochs 0.01 --out @G --platform "

/* Platform files: a byte-order mark refused before SimGrid parses (it aborts on one), values
 * strictly decimal, a GPU class the table has. */
static const bad_case platform_files[] = {
    {PLAT "@T/bom.xml", 1, "bom.xml:1: the file starts with a UTF-8 byte-order mark"},
    {PLAT "@T/bomcrlf.xml", 1, "bomcrlf.xml:1: the file starts with a UTF-8 byte-order mark"},
    {PLAT "@T/hexbw.xml", 1, "bw=\"0x10Gbps\": not a bandwidth"},
    {PLAT "@T/hexspeed.xml", 1, "speed=\"0x1p4Tf\": not a speed"},
    {PLAT "@T/hexlat.xml", 1, "lat=\"0x0\": not a time"},
    {PLAT "@T/tpu.xml", 1, "value=\"tpu9000\">: unknown GPU class (valid: "},
    {PLAT "@T/dir", 1, "platform @T/dir: a directory, not a file"},
    {PLAT "/dev/zero", 1, "platform /dev/zero: a character device"},
    {"replay --profile resnet101 --workers 4 --steps 2 --out @G --platform @T/bom.xml", 1,
     "byte-order mark"},
    {"bench network --sizes 8 --platform @T/bom.xml", 1, "byte-order mark"},
};

static void test_platform_files(void) {
    make_fixtures();
    run_cases(platform_files, (int)(sizeof platform_files / sizeof platform_files[0]));
}

static void test_config_files(void) {
    make_fixtures();
    run_cases(config_files, (int)(sizeof config_files / sizeof config_files[0]));
}

/* Starts `syncsim ARGS` in a process group of its own (stdout and stderr to LOG, TMPDIR an empty
 * directory of its own), waits until LOG holds `ready` (at most 300 s: a loaded machine), sends
 * `sig` to the whole group as a terminal's Ctrl-C does, and waits for the program (at most
 * 300 s). Returns its exit code (-1: it never got ready, or did not end); *left: 1 when a process
 * of the group is still alive after it ended (killed then, so no test leaves one), 2 when a file
 * is left in its TMPDIR (a simulation's platform). */
static int interrupt_run(const char *args, const char *ready, int sig, const char *log, int *left) {
    char cmd[2048], tmpdir[700];
    snprintf(tmpdir, sizeof tmpdir, "%s.tmpdir", log);
    mkdir(tmpdir, 0700);
    snprintf(cmd, sizeof cmd, "cd %s && TMPDIR=%s exec %s/syncsim %s > %s 2>&1 </dev/null", tmp_dir,
             tmpdir, SS_BINARY_DIR, args, log);
    *left = 0;
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    int code = -1, status;
    for (int i = 0; i < 3000; i++) { /* poll the log, 0.1 s apart */
        size_t len = 0;
        char *text = read_all(log, &len);
        int got = text && memmem(text, len, ready, strlen(ready)) != NULL;
        free(text);
        if (got) break;
        if (waitpid(pid, &status, WNOHANG) == pid) { /* ended before it was ready */
            kill(-pid, SIGKILL);
            return -1;
        }
        usleep(100000);
    }
    kill(-pid, sig);
    for (int i = 0; i < 3000; i++) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
        usleep(100000);
    }
    if (code < 0) kill(-pid, SIGKILL), waitpid(pid, &status, 0);
    for (int i = 0; i < 50 && kill(-pid, 0) == 0; i++) /* an orphan would still be in the group */
        usleep(100000);
    if (kill(-pid, 0) == 0) {
        *left = 1;
        kill(-pid, SIGKILL);
    }
    if (!*left && ss_test_dir_entries(tmpdir) != 0) *left = 2;
    return code;
}

/* validate network and scaling on SIGINT or SIGTERM to the process group: exit 130, no process
 * left behind (a child once deadlocked in SimGrid's exit handler), a message. */
static void test_validate_interrupted(void) {
    static const struct {
        const char *args, *ready;
        int sig;
    } cases[] = {{"validate network --references @S/traces/reference/nccl", "size_bytes", SIGINT},
                 {"validate network --references @S/traces/reference/nccl", "size_bytes", SIGTERM},
                 {"validate scaling --scaling-references "
                  "@S/traces/reference/scaling/scaling.csv",
                  "gpus published", SIGINT}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char args[1024], log[600];
        expand(cases[k].args, args, sizeof args);
        snprintf(log, sizeof log, "%s/interrupt-%zu.log", tmp_dir, k);
        int left;
        int code = interrupt_run(args, cases[k].ready, cases[k].sig, log, &left);
        size_t len = 0;
        char *text = read_all(log, &len);
        int ok = code == 130 && !left && text && strstr(text, "interrupted");
        if (!ok)
            fprintf(stderr,
                    "\n  syncsim %s: exit %d, left %d (1: a process, 2: a file in TMPDIR), "
                    "log:\n%.1500s\n",
                    args, code, left, text ? text : "");
        CU_ASSERT(ok);
        free(text);
    }
}

/* Hexadecimal, blanks and empty items: refused in every number a user gives, with units or in
 * lists (strtod read "0x10Gbps" as 16 Gbps). */
static const bad_case numbers[] = {
    {RUN8 "--bandwidth 0x10Gbps", 2, "option --bandwidth: cannot read bandwidth '0x10Gbps'"},
    {RUN8 "--bandwidth 0x1p4Gbps", 2, "option --bandwidth: cannot read bandwidth"},
    {RUN8 "--latency 0x10us", 2, "option --latency: cannot read latency '0x10us'"},
    {RUN8 "--nodes 2 --intra-latency 0x5us", 2, "option --intra-latency: cannot read latency"},
    {RUN8 "--nodes 2 --intra-bandwidth 0x5GBps", 2, "option --intra-bandwidth: cannot read"},
    {"train --policy selsync --loss-tolerance 0.1 --deadline 0x1s --out @G", 2,
     "option --deadline: invalid value '0x1s' (expected a duration >= 0"},
    {"train --policy selsync --loss-tolerance 0.1 --deadline -1s --out @G", 2,
     "option --deadline: invalid value '-1s' (expected a duration >= 0"},
    {"compare --networks 0x10Gbps --workers 2 --out @G", 2, "--networks: cannot read bandwidth"},
    {"compare --networks 5Gbps,,100Gbps --workers 2 --out @G", 2, "--networks"},
    {"platform --bandwidth 0x10Gbps", 2, "option --bandwidth: cannot read bandwidth"},
    {"bench network --sizes 0x10", 2, "--sizes: '0x10' is not a size list"},
    {"bench network --sizes 8,,16", 2, "--sizes: '8,,16' is not a size list"},
    {"bench network --sizes 8:1GiB:x0x2", 2, "--sizes"},
    {"bench network --smpi --hosts-list 0x10", 2, "--hosts-list: '0x10' is not a list"},
    {"bench network --smpi --channels 2", 2, "--channels does not apply to bench network --smpi"},
    {"bench network --smpi --sizes 1KiB", 2, "--sizes does not apply to bench network --smpi"},
    {"bench network --bytes 1000", 2, "--bytes applies to bench network --smpi only"},
    {"bench network --smpi --out /tmp/x", 2, "--out does not apply to bench network --smpi"},
    {RUN8 "--slow-workers 0,,1", 2, "--slow-workers: '0,,1' is not a list of distinct"},
    {RUN8 "--slow-workers 1,1", 2, "--slow-workers: '1,1' is not a list of distinct"},
    {RUN8 "--slow-workers 0x1", 2, "--slow-workers"},
    {RUN8 "--dump-gradients 1,,2", 2, "--dump-gradients: '1,,2' is not a list of steps"},
    {RUN8 "--dump-gradients 0x1", 2, "--dump-gradients"},
    {RUN8 "--partition noniid:0x2", 2, "noniid:0x2"},
    {RUN8 "--compute measured:0x2", 2, "--compute: bad scale"},
    {"sweep @T/a.ini --shard 0x1/2", 2, "--shard: '0x1/2'"},
    {RUN8 "--seed 0x10", 2, "option --seed"},
    {RUN8 "--lr 0x1p-4", 2, "option --lr"},
    {RUN8 "--batch 0x40", 2, "option --batch"},
};

static void test_numbers(void) {
    run_cases(numbers, (int)(sizeof numbers / sizeof numbers[0]));
}

/* report: a malformed cell, a NaN, a summary value of the wrong type, a truncated trace are
 * errors naming the file and line, not blanks in the tables. */
static const bad_case reports[] = {
    {"report @T/rhex --out @T/rhex/rep", 1, "rhex/metrics.csv:2: sim_time_s '0x10' is not a"},
    {"report @T/rnan --out @T/rnan/rep", 1, "rnan/metrics.csv:2: test_accuracy 'nan' is not"},
    {"report @T/rhigh --out @T/rhigh/rep", 1, "rhigh/summary.json: \"test_accuracy\" is not a"},
    {"report @T/rcut --out @T/rcut/rep", 1, "rcut/steps.trace:"},
    {"report @T/rzero --out @T/rzero/rep", 1, "rzero/summary.json: a character device"},
    {"report @T/nowhere", 1, "nowhere"},
};

static void test_reports(void) {
    char *out = NULL;
    const char *script =
        "for d in rhex rnan rhigh rcut rzero; do rm -rf $d; cp -r @G $d; done && "
        "sed -i '2s/^\\([^,]*,[^,]*,\\)[^,]*/\\10x10/' rhex/metrics.csv && "
        "sed -i '2s/^\\([^,]*,[^,]*,[^,]*,[^,]*,[^,]*,\\)[^,]*/\\1nan/' rnan/metrics.csv && "
        "sed -i 's/\"test_accuracy\":[^,]*/\"test_accuracy\": \"high\"/' rhigh/summary.json && "
        "head -c $(( $(stat -c %s @G/steps.trace) - 7 )) @G/steps.trace > rcut/steps.trace && "
        "rm rzero/summary.json && ln -s /dev/zero rzero/summary.json";
    CU_ASSERT_EQUAL_FATAL(shell_in_tmp(script, &out), 0);
    free(out);
    run_cases(reports, (int)(sizeof reports / sizeof reports[0]));
}

/* Inputs that silently changed the run: a corrupt IDX label, --model ignored by bench kernels. */
static const bad_case silent[] = {
    {"train --dataset @T/idx --epochs 0.01 --out @G", 1,
     "train-labels-idx1-ubyte: label 200 of sample 17 makes 201 classes"},
    {RUN8 "--dataset @T/idx", 1, "label 200 of sample 17"},
    {"bench kernels --model resnet:21", 2, "bench kernels --model resnet:21: model 'resnet:21'"},
    {"bench kernels --model vgg:15", 2, "bad vgg depth at '15'"},
    {"bench kernels --model transformer", 2, "resnet:D or resnet:D,proj"},
    {"train --model resnet:20,B --epochs 0.01 --out @G", 2, "bad resnet depth or option at '20,B'"},
    {"train --model cnn:6,16 --epochs 0.01 --out @G", 2, "cnn takes two conv channels and"},
};

static void test_silent(void) {
    make_corrupt_idx();
    run_cases(silent, (int)(sizeof silent / sizeof silent[0]));
}

/* Language models: a malformed gpt form lists the valid ones; a language model given an image
 * set names the text sets. */
static const bad_case language[] = {
    {"train --model gpt:2,200,3,35 --epochs 0.01 --out @G", 2, "gpt takes L,D,H,T or L,D,H,T,P"},
    {"train --model gpt:2,200 --epochs 0.01 --out @G", 2, "gpt:wlm"},
    {"train --model gpt:wlm --dataset synthetic --epochs 0.01 --out @G", 2,
     "it takes a text data set (web-bible, wikitext-2, wikitext-103, ptb), not synthetic"},
    {"train --model gpt:wlm --dataset wikitext-2 --epochs 0.01 --out @G", 2,
     "wikitext-2 needs --data-dir DIR holding wiki.train.tokens"},
    {"train --model gpt:wlm --dataset web-bible --workers 2 --partition noniid:2 --epochs 0.01 "
     "--out @G",
     2, "--partition noniid splits by label; the text set web-bible has none"},
};

static void test_language(void) {
    run_cases(language, (int)(sizeof language / sizeof language[0]));
}

/* Options that do nothing without another one are refused, as other policies' options are. */
static const bad_case requirements[] = {
    {RUN8 "--policy selsync --deadline 1s", 2, "option --deadline applies only with --loss"},
    {RUN8 "--ps-servers 2", 2, "option --ps-servers applies only with parameter servers"},
    {RUN8 "--slow-factor 3", 2, "option --slow-factor applies only with --slow-workers"},
    {RUN8 "--bucket-mb 10", 2, "option --bucket-mb applies only with overlap"},
    {RUN8 "--overlap off --bucket-mb 10", 2, "option --bucket-mb applies only with overlap"},
    {RUN8 "--gpus-per-node 4", 2, "option --gpus-per-node applies only with --nodes N"},
    {RUN8 "--fabric infiniband", 2, "option --fabric applies only with --nodes N"},
    {"platform --hosts 8 --nics-per-node 2", 2, "option --nics-per-node applies only with --nodes"},
    {"compare --deadline 1s --workers 2 --out @G", 2, "option --deadline applies only with"},
};

static void test_requirements(void) {
    run_cases(requirements, (int)(sizeof requirements / sizeof requirements[0]));
}

/* ---- the generated matrix: every option of the table, its bad values by kind ---- */

/* The subcommands as a user types them, with the option-table bit each parses with. */
static const struct {
    const char *words;
    unsigned command;
} subcommands[] = {{"train", CMD_TRAIN},
                   {"compare", CMD_COMPARE},
                   {"platform", CMD_PLATFORM},
                   {"bench network", CMD_BENCH_NETWORK},
                   {"replay", CMD_REPLAY},
                   {"validate network", CMD_VALIDATE},
                   {"sweep @T/none.ini", CMD_SWEEP},
                   {"report @G", CMD_REPORT}};
#define SUBCOMMANDS ((int)(sizeof subcommands / sizeof subcommands[0]))

/* 1 when some row named `name` accepts `command` (replay's --trace FILE and train's --trace are
 * two rows of one name). */
static int name_accepted(const char *name, unsigned command) {
    options_row_info r;
    for (int i = 0; i < options_row_count(); i++) {
        options_row_at(i, &r);
        if (!strcmp(r.name, name) && (r.commands & command)) return 1;
    }
    return 0;
}

/* The bad values of a row, by kind (NULL-terminated in vals, formatted into buf). */
static int bad_values(const options_row_info *r, char vals[][64]) {
    int n = 0;
#define ADD(...) snprintf(vals[n++], 64, __VA_ARGS__)
    if (!strcmp(r->kind, "int") || !strcmp(r->kind, "long")) {
        ADD("abc"), ADD("0x10"), ADD("1.5"), ADD("%s", ""), ADD("%.0f", r->min - 1);
        ADD("%.0f", r->max + 1), ADD("99999999999999999999999");
    } else if (!strcmp(r->kind, "double")) {
        ADD("abc"), ADD("0x10"), ADD("nan"), ADD("inf"), ADD("%s", ""), ADD("1e999");
        ADD("%.17g", r->min - 1), ADD("%.17g", r->max * 10 + 1);
    } else if (!strcmp(r->kind, "u64")) {
        ADD("-1"), ADD("0x10"), ADD("%s", ""), ADD("1.5"), ADD("99999999999999999999999");
    } else if (!strcmp(r->kind, "choice")) {
        const char *c = r->choices + (r->choices[0] == '|');
        size_t w = strcspn(c, "|");
        ADD("bogus"), ADD("%.*s ", (int)w, c);
        if (r->choices[0] != '|') ADD("%s", ""); /* "|a|b": empty is a choice (--policy '') */
    } else if (!strcmp(r->kind, "auto")) {
        ADD("maybe"), ADD("%s", "");
    } else if (!strcmp(r->kind, "string") && !strcmp(r->metavar, "BW")) {
        ADD("0x10Gbps"), ADD("25"), ADD("-5Gbps"), ADD("nanGbps"), ADD("25 Gbps");
    } else if (!strcmp(r->kind, "string") && !strcmp(r->metavar, "T")) {
        ADD("0x10us"), ADD("5"), ADD("-1us"), ADD("nanus");
    }
#undef ADD
    return n;
}

/* Appends a case: (buf is the args), expected 2 and a fragment. */
typedef struct case_list {
    bad_case *c;
    char (*args)[256], (*frag)[160];
    int n, cap;
} case_list;

static void push(case_list *l, const char *frag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void push(case_list *l, const char *frag, const char *fmt, ...) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 512;
        l->c = realloc(l->c, sizeof *l->c * (size_t)l->cap);
        l->args = realloc(l->args, sizeof *l->args * (size_t)l->cap);
        l->frag = realloc(l->frag, sizeof *l->frag * (size_t)l->cap);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->args[l->n], sizeof l->args[0], fmt, ap);
    va_end(ap);
    snprintf(l->frag[l->n], sizeof l->frag[0], "%s", frag);
    l->n++;
}

/* The cases of every option: its kind's bad values (on the first subcommand that takes it, as
 * --name VALUE and --name=VALUE), its value missing, a misspelling, and it given to each
 * subcommand that does not take it. The next option of the table gets its cases for free. */
static void matrix_cases(case_list *l) {
    options_row_info r;
    char frag[160];
    for (int i = 0; i < options_row_count(); i++) {
        options_row_at(i, &r);
        int first = -1;
        for (int s = 0; s < SUBCOMMANDS && first < 0; s++)
            if (r.commands & subcommands[s].command) first = s;
        if (first < 0) continue;
        const char *sc = subcommands[first].words;
        const char *out = name_accepted("out", subcommands[first].command) ? " --out @G" : "";
        char vals[16][64];
        int nv = bad_values(&r, vals);
        snprintf(frag, sizeof frag, "option --%s", r.name);
        for (int v = 0; v < nv; v++) {
            push(l, frag, "%s --%s '%s'%s", sc, r.name, vals[v], out);
            if (v == 1) push(l, frag, "%s --%s='%s'%s", sc, r.name, vals[v], out);
        }
        if (!strcmp(r.kind, "flag")) {
            push(l, frag, "%s --%s=maybe%s", sc, r.name, out);
            push(l, frag, "%s --%s=2%s", sc, r.name, out);
        }
        snprintf(frag, sizeof frag, "unknown option --%szz", r.name);
        push(l, frag, "%s --%szz 1%s", sc, r.name, out);
        if (strcmp(r.kind, "flag")) {
            snprintf(frag, sizeof frag, "option --%s needs a value", r.name);
            push(l, frag, "%s%s --%s", sc, out, r.name);
        }
        /* given where it does not apply: one subcommand per option, in turn, so that every
         * subcommand gets its share while the matrix stays fast (~0.1 s a case) */
        for (int k = 0, given = 0; k < SUBCOMMANDS && given < 1; k++) {
            const int s = (i + k) % SUBCOMMANDS;
            const unsigned bit = subcommands[s].command;
            const char *o = name_accepted("out", bit) ? " --out @G" : "";
            if (!name_accepted(r.name, bit)) {
                given++;
                /* messages name the subcommand, and bench's target ("bench network") */
                char label[64];
                snprintf(label, sizeof label, "%s", subcommands[s].words);
                if (strncmp(label, "bench ", 6)) label[strcspn(label, " ")] = '\0';
                snprintf(frag, sizeof frag, "option --%s does not apply to 'syncsim %s'", r.name,
                         label);
                push(l, frag, "%s --%s 1%s", subcommands[s].words, r.name, o);
            }
        }
    }
}

static void test_matrix(void) {
    case_list l = {0};
    matrix_cases(&l);
    for (int k = 0; k < l.n; k++)
        l.c[k] = (bad_case){l.args[k], 2, l.frag[k]};
    run_cases(l.c, l.n);
    free(l.c);
    free(l.args);
    free(l.frag);
}

/* SIGHUP (a closed terminal) stops a training run as SIGINT does: exit 130, a summary that says
 * interrupted, no temporary file. */
static void test_train_hangup(void) {
    char args[1024], log[600], path[700];
    expand("train --policy bsp --workers 4 --dataset synthetic --epochs 1000 --progress no --out "
           "@T/hup",
           args, sizeof args);
    snprintf(log, sizeof log, "%s/hup.log", tmp_dir);
    int left;
    int code = interrupt_run(args, "syncsim train:", SIGHUP, log, &left);
    CU_ASSERT_EQUAL(code, 130);
    CU_ASSERT(!left);
    snprintf(path, sizeof path, "%s/hup/summary.json", tmp_dir);
    size_t len = 0;
    char *text = read_all(path, &len);
    CU_ASSERT(text && strstr(text, "\"interrupted\""));
    free(text);
    char why[1300];
    CU_ASSERT(no_tmp_files(tmp_dir, why, sizeof why));
}

static CU_TestInfo bad_tests[] = {
    {"train: SIGHUP stops the run as SIGINT does", test_train_hangup},
    {"options that need another option are refused without it", test_requirements},
    {"every option of the table: bad values by kind, missing value, misspelled, not applicable",
     test_matrix},
    {"inputs that silently changed a run: IDX label, bench kernels --model", test_silent},
    {"language models: malformed gpt forms, image sets", test_language},
    {"numbers: no hexadecimal, no empty list item, anywhere", test_numbers},
    {"report: malformed cells, NaN, wrong JSON types, truncated traces are errors", test_reports},
    {"validate network and scaling: SIGINT/SIGTERM exit 130, no process left",
     test_validate_interrupted},
    {"platform files: byte-order mark, hexadecimal values, unknown GPU class", test_platform_files},
    {"configuration and other files: special files, limits, sections, file and line",
     test_config_files},
    {"compare: runs of same-named platforms apart, no stale run or figure", test_compare_dirs},
    {"compare: a point listed twice is refused", test_compare_twice},
    {"a diverged run's outputs (empty cells, nan and inf in the trace) read back",
     test_diverged_outputs},
    {"late usage errors and inputs inside OUT leave OUT untouched", test_late_usage},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"bad inputs", suite_init, suite_clean, NULL, NULL, bad_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}

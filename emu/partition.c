/* Partitions of a training set over N workers, and the workers' mini-batch iterators.
 *
 * Letters: n training samples, N workers, K classes, k labels per worker (NONIID), b batch size,
 * C = floor(n / N) samples per SELDP chunk.
 *
 * Random streams (all from the run's seed): RNG_STREAM_PARTITION for the shuffle behind DEFDP
 * and SELDP and for NONIID's label order and per-label shuffles; RNG_STREAM_PARTITION +
 * ((w + 1) << 32) for worker w's permutation under SELDP_PERM (far from every other stream);
 * RNG_STREAM_SHUFFLE + w for worker w's per-pass reshuffles.
 *
 * SELDP rotation. The shuffled set is cut into N chunks of C samples (the n mod N samples left
 * over, fewer than N, are read by nobody and have owner -1). Worker w reads chunks w, w+1, ...,
 * w-1 (mod N); each pass reshuffles the samples inside every chunk but keeps the chunk order, so
 * the sample read at position t*b + j of worker w's stream (step t, slot j) lies in chunk
 *     (w + floor((t*b + j) / C)) mod N,
 * and in particular a step's first sample lies in chunk (w + floor(t*b / C)) mod N. All workers
 * share t*b + j, so on any step the N workers draw from N different chunks. */
#include "emu/partition.h"

#include "common/rng.h"
#include "common/number.h"
#include "common/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct partition {
    partition_kind kind;
    int workers;           /* N */
    int labels_per_worker; /* k (NONIID), else 0 */
    double alpha;          /* DIRICHLET's concentration, else 0 */
    size_t n;              /* training samples */
    size_t chunk;          /* C: SELDP samples per chunk, else 0 */
    /* DEFDP/NONIID: the shards back to back (n); SELDP: chunks 0..N-1 twice (2 N C), so that
     * worker w's rotation is the contiguous run of N C indices from chunk w; SELDP_PERM: the N
     * permutations back to back (N, n). */
    size_t *order;
    size_t *start; /* (N) offset of worker w's indices in order */
    size_t *size;  /* (N) number of worker w's indices */
    int *owner;    /* (n) shard owner or SELDP chunk; -1 for none */
};

struct batch_iter {
    size_t n;       /* indices per pass */
    size_t segment; /* shuffled independently: C under SELDP (one chunk), else n */
    size_t *order;  /* (n) this pass's reading order */
    size_t pos;     /* next position in order */
    long passes;    /* completed passes */
    rng r;          /* RNG_STREAM_SHUFFLE + worker */
};

static const struct {
    partition_kind kind;
    const char *name;
} kind_names[] = {{PARTITION_DEFDP, "defdp"},
                  {PARTITION_SELDP, "seldp"},
                  {PARTITION_SELDP_PERM, "seldp-perm"},
                  {PARTITION_NONIID, "noniid"},
                  {PARTITION_DIRICHLET, "dirichlet"}};

static const char *const valid_forms = "defdp, seldp, seldp-perm, noniid:K (K labels per worker), "
                                       "dirichlet:ALPHA (label skew, e.g. dirichlet:0.5)";

int partition_parse(const char *text, partition_kind *kind, double *param) {
    *param = 0;
    if (!text) return ss_error_set(SS_EUSAGE, "no partition given: expected %s", valid_forms);
    for (size_t i = 0; i < 3; i++) {
        if (strcmp(text, kind_names[i].name) == 0) {
            *kind = kind_names[i].kind;
            return SS_OK;
        }
    }
    if (strncmp(text, "noniid:", 7) == 0) {
        long k;
        if (number_parse_long(text + 7, 1, 256, &k) == 0) {
            *kind = PARTITION_NONIID;
            *param = (double)k;
            return SS_OK;
        }
        return ss_error_set(SS_EUSAGE,
                            "partition '%s': K must be a whole number of labels per worker, "
                            "1..256 (e.g. noniid:1)",
                            text);
    }
    if (strncmp(text, "dirichlet:", 10) == 0) {
        double a;
        if (number_parse_double(text + 10, &a) == 0 && a >= 1e-3 && a <= 1e6) {
            *kind = PARTITION_DIRICHLET;
            *param = a;
            return SS_OK;
        }
        return ss_error_set(SS_EUSAGE,
                            "partition '%s': ALPHA must be a number in [0.001, 1e6] (e.g. "
                            "dirichlet:0.5, NIID-Bench's setting; smaller is more skewed)",
                            text);
    }
    return ss_error_set(SS_EUSAGE, "unknown partition '%s': expected %s", text, valid_forms);
}

const char *partition_kind_name(partition_kind kind) {
    for (size_t i = 0; i < sizeof kind_names / sizeof kind_names[0]; i++)
        if (kind_names[i].kind == kind) return kind_names[i].name;
    return "unknown";
}

static void shuffle_indices(rng *r, size_t *items, size_t n) {
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)rng_below(r, i);
        size_t t = items[i - 1];
        items[i - 1] = items[j];
        items[j] = t;
    }
}

static size_t *iota_shuffled(rng *r, size_t n) {
    size_t *items = ss_malloc(n * sizeof(size_t));
    for (size_t i = 0; i < n; i++)
        items[i] = i;
    shuffle_indices(r, items, n);
    return items;
}

static void build_defdp(partition *p, rng *r) {
    size_t n = p->n, workers = (size_t)p->workers, at = 0;
    p->order = iota_shuffled(r, n);
    for (size_t w = 0; w < workers; w++) {
        p->start[w] = at;
        p->size[w] = n / workers + (w < n % workers);
        for (size_t i = 0; i < p->size[w]; i++)
            p->owner[p->order[at + i]] = (int)w;
        at += p->size[w];
    }
}

static void build_seldp(partition *p, rng *r) {
    size_t workers = (size_t)p->workers, c = p->n / workers, len = workers * c;
    size_t *perm = iota_shuffled(r, p->n);
    p->chunk = c;
    p->order = ss_malloc(2 * len * sizeof(size_t));
    for (size_t i = 0; i < 2 * len; i++)
        p->order[i] = perm[i % len];
    for (size_t i = 0; i < len; i++)
        p->owner[perm[i]] = (int)(i / c);
    for (size_t w = 0; w < workers; w++) {
        p->start[w] = w * c;
        p->size[w] = len;
    }
    free(perm);
}

static void build_seldp_perm(partition *p, uint64_t seed) {
    size_t n = p->n;
    p->order = ss_malloc((size_t)p->workers * n * sizeof(size_t));
    for (int w = 0; w < p->workers; w++) {
        rng r;
        rng_seed(&r, seed, RNG_STREAM_PARTITION + ((uint64_t)(w + 1) << 32));
        size_t *perm = p->order + (size_t)w * n;
        for (size_t i = 0; i < n; i++)
            perm[i] = i;
        shuffle_indices(&r, perm, n);
        p->start[w] = (size_t)w * n;
        p->size[w] = n;
    }
}

/* log of a Gamma(a, 1) draw: Marsaglia and Tsang (2000) for a >= 1; below 1 their boost,
 * Gamma(a) = Gamma(a + 1) U^(1/a), kept in logs so that tiny a does not underflow to 0. */
static double log_gamma_draw(rng *r, double a) {
    double boost = 0;
    if (a < 1) {
        double u = rng_uniform(r);
        boost = log(u > 0 ? u : 0x1p-53) / a;
        a += 1;
    }
    const double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        const double x = rng_normal(r);
        double v = 1 + c * x;
        if (v <= 0) continue;
        v = v * v * v;
        const double u = rng_uniform(r);
        if (u < 1 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1 - v + log(v)))
            return log(d * v) + boost;
    }
}

/* One draw of the class-by-worker counts take[k N + w]: per class, proportions from Dir_N(alpha),
 * a worker holding n/N samples already taking no more (NIID-Bench's balance), cut at the
 * cumulative proportions. Returns the smallest worker's total. */
static size_t dirichlet_draw(rng *r, double alpha, int classes, int workers, const size_t *count,
                             size_t n, size_t *take, size_t *held, double *share) {
    memset(held, 0, (size_t)workers * sizeof(size_t));
    for (int k = 0; k < classes; k++) {
        double top = -INFINITY;
        for (int w = 0; w < workers; w++) {
            share[w] = log_gamma_draw(r, alpha);
            if (held[w] * (size_t)workers >= n) share[w] = -INFINITY;
            if (share[w] > top) top = share[w];
        }
        double sum = 0;
        for (int w = 0; w < workers; w++)
            sum += share[w] = isfinite(top) ? exp(share[w] - top) : 1.0;
        const size_t total = count[k + 1] - count[k];
        size_t before = 0;
        double cum = 0;
        for (int w = 0; w < workers; w++) {
            cum += share[w];
            size_t cut = w == workers - 1 ? total : (size_t)floor((double)total * cum / sum);
            if (cut > total) cut = total;
            if (cut < before) cut = before;
            take[(size_t)k * workers + w] = cut - before;
            held[w] += cut - before;
            before = cut;
        }
    }
    size_t least = held[0];
    for (int w = 1; w < workers; w++)
        if (held[w] < least) least = held[w];
    return least;
}

/* Samples grouped by label in seeded order: grouped[count[c] .. count[c + 1]) are label c's. */
static void group_by_label(const dataset *train, rng *r, size_t **count_out, size_t **grouped_out) {
    const int classes = train->classes;
    const size_t n = train->n;
    size_t *count = ss_calloc((size_t)classes + 1, sizeof(size_t));
    for (size_t i = 0; i < n; i++) {
        SS_ASSERT(train->y[i] < classes);
        count[train->y[i] + 1]++;
    }
    for (int c = 0; c < classes; c++)
        count[c + 1] += count[c];
    size_t *fill = ss_malloc((size_t)classes * sizeof(size_t));
    memcpy(fill, count, (size_t)classes * sizeof(size_t));
    size_t *grouped = ss_malloc((n ? n : 1) * sizeof(size_t));
    for (size_t i = 0; i < n; i++)
        grouped[fill[train->y[i]]++] = i;
    for (int c = 0; c < classes; c++)
        shuffle_indices(r, grouped + count[c], count[c + 1] - count[c]);
    free(fill);
    *count_out = count;
    *grouped_out = grouped;
}

#define DIRICHLET_DRAWS 1000

static int build_dirichlet(partition *p, const dataset *train, rng *r) {
    const int classes = train->classes, workers = p->workers;
    const size_t n = p->n;
    size_t *count, *grouped;
    group_by_label(train, r, &count, &grouped);
    size_t *take = ss_malloc((size_t)classes * (size_t)workers * sizeof(size_t));
    size_t *held = ss_malloc((size_t)workers * sizeof(size_t));
    double *share = ss_malloc((size_t)workers * sizeof(double));
    size_t least_wanted = n / (2 * (size_t)workers);
    if (least_wanted > 10) least_wanted = 10;
    if (least_wanted < 1) least_wanted = 1;
    int draws = 0;
    size_t least = 0;
    while (draws++ < DIRICHLET_DRAWS &&
           (least = dirichlet_draw(r, p->alpha, classes, workers, count, n, take, held, share)) <
               least_wanted) {
    }
    int st = SS_OK;
    if (least < least_wanted) {
        st = ss_error_set(SS_EUSAGE,
                          "dirichlet:%g: in %d draws some of the %d workers kept holding fewer "
                          "than %zu samples of %s; use a larger alpha or fewer workers",
                          p->alpha, DIRICHLET_DRAWS, workers, least_wanted, train->name);
    } else {
        p->order = ss_malloc((n ? n : 1) * sizeof(size_t));
        size_t *next = ss_malloc((size_t)classes * sizeof(size_t));
        memcpy(next, count, (size_t)classes * sizeof(size_t));
        size_t at = 0;
        for (int w = 0; w < workers; w++) {
            p->start[w] = at;
            for (int k = 0; k < classes; k++) {
                const size_t len = take[(size_t)k * workers + w];
                for (size_t i = 0; i < len; i++) {
                    p->order[at + i] = grouped[next[k] + i];
                    p->owner[grouped[next[k] + i]] = w;
                }
                next[k] += len;
                at += len;
            }
            p->size[w] = at - p->start[w];
        }
        free(next);
    }
    free(share);
    free(held);
    free(take);
    free(grouped);
    free(count);
    return st;
}

/* Worker w holds labels label_order[(w k + j) mod K], j < k; the samples of a label (in seeded
 * order) are split into nearly equal consecutive parts, one per holder in worker order. */
static int build_noniid(partition *p, const dataset *train, rng *r) {
    int classes = train->classes, k = p->labels_per_worker, workers = p->workers;
    size_t n = p->n;
    int *label_order = ss_malloc((size_t)classes * sizeof(int));
    for (int i = 0; i < classes; i++)
        label_order[i] = i;
    rng_shuffle(r, label_order, (size_t)classes);

    size_t *count, *grouped; /* samples grouped by label, each group shuffled */
    group_by_label(train, r, &count, &grouped);

    int *holders = ss_calloc((size_t)classes, sizeof(int));
    for (int w = 0; w < workers; w++)
        for (int j = 0; j < k; j++)
            holders[label_order[((size_t)w * k + j) % classes]]++;

    int *seen = ss_calloc((size_t)classes, sizeof(int)); /* holders met so far, per label */
    p->order = ss_malloc((n ? n : 1) * sizeof(size_t));
    size_t at = 0;
    int st = SS_OK;
    for (int w = 0; w < workers; w++) {
        p->start[w] = at;
        for (int j = 0; j < k; j++) {
            int label = label_order[((size_t)w * k + j) % classes];
            size_t total = count[label + 1] - count[label], h = (size_t)holders[label];
            size_t part = (size_t)seen[label]++;
            size_t len = total / h + (part < total % h);
            size_t from = count[label] + part * (total / h) + (part < total % h ? part : total % h);
            for (size_t i = 0; i < len; i++) {
                p->order[at + i] = grouped[from + i];
                p->owner[grouped[from + i]] = w;
            }
            at += len;
        }
        p->size[w] = at - p->start[w];
        if (p->size[w] == 0 && st == SS_OK)
            st = ss_error_set(SS_EUSAGE,
                              "noniid:%d: worker %d gets no samples (its labels have fewer "
                              "samples than workers holding them); use fewer workers or a larger "
                              "k",
                              k, w);
    }
    free(seen);
    free(holders);
    free(grouped);
    free(count);
    free(label_order);
    return st;
}

void partition_destroy(partition *p) {
    if (!p) return;
    free(p->order);
    free(p->start);
    free(p->size);
    free(p->owner);
    free(p);
}

int partition_check(const dataset *train, int workers, partition_kind kind, double param) {
    const int labels_per_worker = kind == PARTITION_NONIID ? (int)param : 0;
    if (workers < 1) return ss_error_set(SS_EUSAGE, "%d workers: need at least 1", workers);
    if ((size_t)workers > train->n)
        return ss_error_set(SS_EUSAGE, "%d workers but only %zu training samples in %s", workers,
                            train->n, train->name);
    if (train->tokens && (kind == PARTITION_NONIID || kind == PARTITION_DIRICHLET))
        return ss_error_set(SS_EUSAGE,
                            "--partition %s splits by label; the text set %s has none (valid: "
                            "defdp, seldp, seldp-perm)",
                            partition_kind_name(kind), train->name);
    if (kind == PARTITION_NONIID) {
        if (labels_per_worker < 1 || labels_per_worker > train->classes)
            return ss_error_set(SS_EUSAGE,
                                "--partition noniid:%d: labels per worker must be 1..%d (%s)",
                                labels_per_worker, train->classes, train->name);
        if ((long)workers * labels_per_worker < train->classes)
            return ss_error_set(SS_EUSAGE,
                                "noniid:%d with %d workers holds only %d of the %d labels of %s: "
                                "need workers x k >= %d",
                                labels_per_worker, workers, workers * labels_per_worker,
                                train->classes, train->name, train->classes);
    } else if (kind == PARTITION_DIRICHLET) {
        if (!(param >= 1e-3 && param <= 1e6))
            return ss_error_set(SS_EUSAGE,
                                "--partition dirichlet:%g: ALPHA must be in [0.001, 1e6]", param);
        if (train->n < (size_t)workers * 2)
            return ss_error_set(SS_EUSAGE,
                                "dirichlet:%g with %d workers: %s has %zu training samples, need "
                                "at least 2 per worker",
                                param, workers, train->name, train->n);
    } else if (kind != PARTITION_DEFDP && kind != PARTITION_SELDP && kind != PARTITION_SELDP_PERM) {
        return ss_error_set(SS_EUSAGE, "unknown partition kind %d: expected %s", (int)kind,
                            valid_forms);
    }
    return SS_OK;
}

int partition_create(const dataset *train, int workers, partition_kind kind, double param,
                     uint64_t seed, partition **out) {
    *out = NULL;
    int rc = partition_check(train, workers, kind, param);
    const int labels_per_worker = kind == PARTITION_NONIID ? (int)param : 0;
    if (rc != SS_OK) return rc;
    partition *p = ss_calloc(1, sizeof *p);
    p->kind = kind;
    p->workers = workers;
    p->labels_per_worker = labels_per_worker;
    p->alpha = kind == PARTITION_DIRICHLET ? param : 0;
    p->n = train->n;
    p->start = ss_malloc((size_t)workers * sizeof(size_t));
    p->size = ss_malloc((size_t)workers * sizeof(size_t));
    p->owner = ss_malloc(train->n * sizeof(int));
    for (size_t i = 0; i < train->n; i++)
        p->owner[i] = -1;
    rng r;
    rng_seed(&r, seed, RNG_STREAM_PARTITION);
    int st = SS_OK;
    switch (kind) {
    case PARTITION_DEFDP:
        build_defdp(p, &r);
        break;
    case PARTITION_SELDP:
        build_seldp(p, &r);
        break;
    case PARTITION_SELDP_PERM:
        build_seldp_perm(p, seed);
        break;
    case PARTITION_NONIID:
        st = build_noniid(p, train, &r);
        break;
    case PARTITION_DIRICHLET:
        st = build_dirichlet(p, train, &r);
        break;
    }
    if (st != SS_OK) {
        partition_destroy(p);
        return st;
    }
    *out = p;
    return SS_OK;
}

size_t partition_worker_size(const partition *p, int worker) {
    SS_ASSERT(worker >= 0 && worker < p->workers);
    return p->size[worker];
}

const size_t *partition_worker_indices(const partition *p, int worker) {
    SS_ASSERT(worker >= 0 && worker < p->workers);
    return p->order + p->start[worker];
}

int partition_owner(const partition *p, size_t sample) {
    SS_ASSERT(sample < p->n);
    return p->owner[sample];
}

/* ---------------------------------------------------------------- batch iterator */

static void reshuffle(batch_iter *it) {
    for (size_t at = 0; at < it->n; at += it->segment)
        shuffle_indices(&it->r, it->order + at, it->segment);
}

batch_iter *batch_iter_create(const partition *p, int worker, uint64_t seed) {
    SS_ASSERT(worker >= 0 && worker < p->workers);
    SS_ASSERT(p->size[worker] > 0); /* partition_create refuses empty workers */
    batch_iter *it = ss_calloc(1, sizeof *it);
    it->n = p->size[worker];
    it->segment = p->kind == PARTITION_SELDP ? p->chunk : it->n;
    it->order = ss_malloc(it->n * sizeof(size_t));
    memcpy(it->order, p->order + p->start[worker], it->n * sizeof(size_t));
    rng_seed(&it->r, seed, RNG_STREAM_SHUFFLE + (uint64_t)worker);
    reshuffle(it);
    return it;
}

void batch_iter_destroy(batch_iter *it) {
    if (!it) return;
    free(it->order);
    free(it);
}

void batch_iter_next(batch_iter *it, size_t *indices, int batch) {
    SS_ASSERT(batch >= 0);
    for (int i = 0; i < batch; i++) {
        indices[i] = it->order[it->pos++];
        if (it->pos == it->n) {
            it->passes++;
            it->pos = 0;
            reshuffle(it);
        }
    }
}

long batch_iter_passes(const batch_iter *it) {
    return it->passes;
}

void dataset_gather(const dataset *d, const size_t *indices, int batch, float *x, uint8_t *y) {
    size_t dim = dataset_features(d);
    for (int i = 0; i < batch; i++) {
        SS_ASSERT(indices[i] < d->n);
        memcpy(x + (size_t)i * dim, d->x + indices[i] * dim, dim * sizeof(float));
        y[i] = d->y[indices[i]];
    }
}

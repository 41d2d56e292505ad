/* TTA and speedup (tta.h). */
#include "analysis/tta.h"
#include "analysis/runs.h"
#include "common/status.h"
#include "sim/policy/policy_registry.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double tta_target(double reference_accuracy, double margin) {
    return reference_accuracy - margin;
}

double tta_target_perplexity(double reference_perplexity, double margin) {
    return reference_perplexity * (1.0 + margin);
}

double tta_of_run_perplexity(const char *dir, double target) {
    double *t, *p;
    size_t m;
    if (run_curve_read_column(dir, "test_perplexity", &t, &p, &m) != SS_OK) return NAN;
    const double tta = run_curve_tta_below_s(t, p, m, target);
    free(t);
    free(p);
    return tta < 0 ? NAN : tta;
}

double tta_of_run(const char *dir, double target) {
    double *t, *a;
    size_t m;
    if (run_curve_read(dir, &t, &a, &m) != SS_OK) return NAN;
    const double tta = run_curve_tta_s(t, a, m, target);
    free(t);
    free(a);
    return tta < 0 ? NAN : tta;
}

double tta_speedup(double reference_tta_s, double tta_s) {
    return reference_tta_s > 0 && tta_s > 0 ? reference_tta_s / tta_s : NAN;
}

int tta_has_accuracy(const run_record *r) {
    return isfinite(r->test_accuracy);
}

tta_result tta_measure(const run_record *run, const run_record *reference, double margin) {
    tta_result t = {TTA_UNFINISHED, NAN, NAN, NAN, NAN, 0};
    if (strcmp(run->status, "ok") != 0) return t;
    if (!tta_has_accuracy(run)) {
        t.status = TTA_NO_ACCURACY;
        return t;
    }
    if (!reference) {
        t.status = TTA_NO_REFERENCE;
        return t;
    }
    if (!tta_has_accuracy(reference)) {
        t.status = TTA_NO_ACCURACY;
        return t;
    }
    if (run_record_is_language(run) && run_record_is_language(reference)) {
        /* perplexity: lower is better */
        t.perplexity = 1;
        t.target = tta_target_perplexity(reference->test_perplexity, margin);
        t.tta_s = tta_of_run_perplexity(run->dir, t.target);
        t.reference_tta_s =
            run == reference ? t.tta_s : tta_of_run_perplexity(reference->dir, t.target);
    } else {
        t.target = tta_target(reference->test_accuracy, margin);
        t.tta_s = tta_of_run(run->dir, t.target);
        t.reference_tta_s = run == reference ? t.tta_s : tta_of_run(reference->dir, t.target);
    }
    t.status = isfinite(t.tta_s) ? TTA_REACHED : TTA_NEVER;
    t.speedup = tta_speedup(t.reference_tta_s, t.tta_s);
    return t;
}

static int applies(int (*key_applies)(const char *, const char *), const char *key,
                   const char *policy) {
    return !key_applies || key_applies(key, policy);
}

/* The keys where run a and the BSP run b differ (among those both have and that apply to both
 * policies), as "key=A vs B" in buf (when not NULL); their number. */
static int differences(const run_record *a, const run_record *b,
                       int (*key_applies)(const char *, const char *), char *buf, size_t n) {
    int count = 0;
    size_t len = 0;
    if (buf && n) buf[0] = '\0';
    for (int k = 0; k < a->n_keys; k++) {
        const char *key = a->key[k];
        if (run_key_is_launch(key) || !strcmp(key, "policy") ||
            !applies(key_applies, key, a->policy) || !applies(key_applies, key, b->policy))
            continue;
        const char *other = run_record_get(b, key);
        if (!other || !strcmp(other, a->value[k])) continue;
        if (buf && len < n)
            len += (size_t)snprintf(buf + len, n - len, "%s%s=%s vs %s", count ? ", " : "", key,
                                    a->value[k], other);
        count++;
    }
    return count;
}

int tta_reference_find(const run_record *runs, int n, int i,
                       int (*key_applies)(const char *key, const char *policy), char *why,
                       size_t why_size) {
    const char *baseline = policy_registry_baseline()->name;
    const run_record *r = &runs[i];
    int best = -1, best_diff = 0, bsp_runs = 0;
    for (int j = 0; j < n; j++) {
        const run_record *b = &runs[j];
        if (strcmp(b->policy, baseline) != 0) continue;
        bsp_runs++;
        const int same_seed = b->seed == r->seed || (isnan(b->seed) && isnan(r->seed));
        const int d = differences(r, b, key_applies, NULL, 0) + !same_seed;
        if (d == 0 && !strcmp(b->status, "ok")) return j;
        /* the closest candidate, for the message: fewest differences, then a finished one */
        if (best < 0 || d < best_diff ||
            (d == best_diff && strcmp(runs[best].status, "ok") && !strcmp(b->status, "ok")))
            best = j, best_diff = d;
    }
    if (why && why_size) {
        if (!bsp_runs) {
            snprintf(why, why_size, "no %s run among the %d runs read", baseline, n);
        } else {
            const run_record *b = &runs[best];
            char diff[600];
            size_t len = 0;
            differences(r, b, key_applies, diff, sizeof diff);
            len = strlen(diff);
            if (!(b->seed == r->seed || (isnan(b->seed) && isnan(r->seed))))
                snprintf(diff + len, sizeof diff - len, "%sseed=%.0f vs %.0f", len ? ", " : "",
                         r->seed, b->seed);
            if (best_diff == 0)
                snprintf(why, why_size, "its %s run %s ended %s", baseline, b->dir, b->status);
            else
                snprintf(why, why_size, "the closest %s run, %s, differs in %s", baseline, b->dir,
                         diff);
        }
    }
    return -1;
}

const char *tta_cell(const tta_result *t, int precision, char *buf, size_t n) {
    switch (t->status) {
    case TTA_REACHED:
        snprintf(buf, n, "%.*f s", precision, t->tta_s);
        break;
    case TTA_NEVER:
        snprintf(buf, n, "never");
        break;
    case TTA_NO_ACCURACY:
        snprintf(buf, n, "n/a");
        break;
    case TTA_NO_REFERENCE:
        snprintf(buf, n, "no BSP");
        break;
    default:
        snprintf(buf, n, "-");
        break;
    }
    return buf;
}

const char *tta_status_word(tta_status s) {
    static const char *const words[] = {"reached", "never", "n/a", "no_bsp", "unfinished"};
    return (unsigned)s < sizeof words / sizeof words[0] ? words[s] : "unfinished";
}

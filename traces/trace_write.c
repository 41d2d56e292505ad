/* The step-trace writer (trace.h, FORMAT.md): header, one line per record, trailer. */
#include "traces/trace_internal.h"
#include "sim/policy/policy_codec.h"

#include <string.h>

void trace_writer_begin(trace_writer *w, FILE *fp, const trace_meta *meta, const policy_config *pc,
                        const char *config_ini) {
    w->fp = fp;
    w->records = 0;
    fprintf(fp, "# %s %d\n", TRACE_MAGIC, TRACE_VERSION);
    fprintf(fp, "# one record per worker step, in completion order; format: traces/FORMAT.md\n");
    fprintf(fp, "# meta source = %s\n", meta->source[0] ? meta->source : "emulation");
    if (meta->model[0]) fprintf(fp, "# meta model = %s\n", meta->model);
    fprintf(fp, "# meta param_count = %.17g\n", meta->param_count);
    fprintf(fp, "# meta param_bytes = %.17g\n", meta->param_bytes);
    fprintf(fp, "# meta sample_bytes = %.17g\n", meta->sample_bytes);
    if (meta->state_bytes > 0) fprintf(fp, "# meta state_bytes = %.17g\n", meta->state_bytes);
    policy_codec_write(pc, "# policy ", fp);
    for (int i = 0; meta->layers && i < meta->n_layers; i++) {
        const sim_layer_cost *l = &meta->layers[i];
        fprintf(fp, "# layer %s %.17g %.17g %.17g %.17g %.17g %d %.17g %.17g\n",
                trace_layer_kind_names[l->kind], l->fwd_flops, l->bwd_flops, l->fwd_bytes,
                l->bwd_bytes, l->param_bytes, l->kernels, l->gemm_n, l->gemm_k);
    }
    if (config_ini) {
        /* config.ini lines: keep the "key = value" ones (not comments or the section) */
        const char *p = config_ini;
        while (*p) {
            size_t len = strcspn(p, "\n");
            if (len > 0 && p[0] != '#' && p[0] != '[' && p[0] != ';' && memchr(p, '=', len))
                fprintf(fp, "# config %.*s\n", (int)len, p);
            p += len;
            if (*p == '\n') p++;
        }
    }
    fprintf(fp, "# columns: %s\n", TRACE_COLUMNS);
}

void trace_writer_record(trace_writer *w, const step_record *r) {
    fprintf(w->fp, "%ld %d %.17g %.17g %.17g %.17g %.17g %.17g %.17g %d %d %.17g %.17g\n", r->step,
            r->worker, r->start_s, r->compute_s, r->comm_s, r->wait_s, r->flops, r->grad_norm,
            r->delta, r->decision, r->samples, r->bytes_sent, r->loss);
    w->records++;
}

void trace_writer_end(trace_writer *w, double sim_time_s) {
    if (sim_time_s >= 0) fprintf(w->fp, "# result sim_time_s = %.17g\n", sim_time_s);
    fprintf(w->fp, "# end records = %ld\n", w->records);
}

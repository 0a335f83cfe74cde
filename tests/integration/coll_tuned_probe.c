/* The algorithm Open MPI's coll_tuned calls, recorded (tests/integration/test_tune_openmpi.py).
 *
 * Debian's Open MPI 4.1.4 is built without --enable-debug, so coll_tuned's own line
 * "coll:tuned:allreduce_intra_do_this algorithm %d ..." (an OPAL_OUTPUT, compiled out in such builds:
 * opal/util/output.h) never prints. mca_coll_tuned.so calls each algorithm, ompi_coll_base_<coll>_intra_<name>,
 * through libmpi.so's dynamic symbols; this library, preloaded (LD_PRELOAD), defines those symbols, writes
 * one line per collective call (the algorithm's function name and its count argument) to the file
 * $COLL_TUNED_PROBE.<rank>, and calls libmpi's function: the algorithm still runs, only its name is noted.
 * Only the outermost call is written (depth 0): an algorithm that hands over to another (allreduce ring to
 * recursive doubling below P elements, nonoverlapping's reduce and bcast) is noted as the one tuned chose.
 * Pointers are passed as void *; the prototypes are coll_base_functions.h's (v4.1.4). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int depth = 0;

static void *real(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (f == NULL) {
        void *mpi = dlopen("libmpi.so.40", RTLD_NOW | RTLD_NOLOAD);
        f = mpi == NULL ? NULL : dlsym(mpi, name);
    }
    if (f == NULL) {
        fprintf(stderr, "coll_tuned_probe: %s not found\n", name);
        abort();
    }
    return f;
}

static void note(const char *name, long count)
{
    const char *base = getenv("COLL_TUNED_PROBE"), *rank = getenv("OMPI_COMM_WORLD_RANK");
    char path[4096];
    FILE *out;
    if (base == NULL)
        return;
    snprintf(path, sizeof path, "%s.%s", base, rank == NULL ? "x" : rank);
    out = fopen(path, "a");
    if (out == NULL)
        return;
    fprintf(out, "%s %ld\n", name, count);
    fclose(out);
}

#define P void *
/* WRAP(name, count parameter, parameters, arguments) */
#define WRAP(name, count, params, args)                                  \
    int name params                                                      \
    {                                                                    \
        static int (*next) params = NULL;                                \
        int result;                                                      \
        if (next == NULL)                                                \
            next = (int (*) params) real(#name);                         \
        if (depth == 0)                                                  \
            note(#name, (long) (count));                                 \
        depth++;                                                         \
        result = next args;                                               \
        depth--;                                                         \
        return result;                                                    \
    }

/* ALLREDUCE_ARGS: sbuf, rbuf, count, dtype, op, comm, module */
#define ALLREDUCE(name) WRAP(name, count, (P s, P r, int count, P d, P o, P c, P m), (s, r, count, d, o, c, m))
ALLREDUCE(ompi_coll_base_allreduce_intra_basic_linear)
ALLREDUCE(ompi_coll_base_allreduce_intra_nonoverlapping)
ALLREDUCE(ompi_coll_base_allreduce_intra_recursivedoubling)
ALLREDUCE(ompi_coll_base_allreduce_intra_ring)
ALLREDUCE(ompi_coll_base_allreduce_intra_redscat_allgather)
WRAP(ompi_coll_base_allreduce_intra_ring_segmented, count,
     (P s, P r, int count, P d, P o, P c, P m, uint32_t seg), (s, r, count, d, o, c, m, seg))

/* ALLGATHER_ARGS, ALLTOALL_ARGS: sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module */
#define EXCHANGE(name) WRAP(name, scount, (P s, int scount, P sd, P r, int rc, P rd, P c, P m), \
                            (s, scount, sd, r, rc, rd, c, m))
EXCHANGE(ompi_coll_base_allgather_intra_basic_linear)
EXCHANGE(ompi_coll_base_allgather_intra_bruck)
EXCHANGE(ompi_coll_base_allgather_intra_recursivedoubling)
EXCHANGE(ompi_coll_base_allgather_intra_ring)
EXCHANGE(ompi_coll_base_allgather_intra_neighborexchange)
EXCHANGE(ompi_coll_base_allgather_intra_two_procs)
EXCHANGE(ompi_coll_base_alltoall_intra_basic_linear)
EXCHANGE(ompi_coll_base_alltoall_intra_pairwise)
EXCHANGE(ompi_coll_base_alltoall_intra_bruck)
EXCHANGE(ompi_coll_base_alltoall_intra_two_procs)
WRAP(ompi_coll_base_alltoall_intra_linear_sync, scount,
     (P s, int scount, P sd, P r, int rc, P rd, P c, P m, int mr), (s, scount, sd, r, rc, rd, c, m, mr))

/* REDUCESCATTER_ARGS: sbuf, rbuf, rcounts, dtype, op, comm, module (noted: the first count) */
#define REDUCESCATTER(name) WRAP(name, rcounts[0], (P s, P r, const int *rcounts, P d, P o, P c, P m), \
                                 (s, r, rcounts, d, o, c, m))
REDUCESCATTER(ompi_coll_base_reduce_scatter_intra_nonoverlapping)
REDUCESCATTER(ompi_coll_base_reduce_scatter_intra_basic_recursivehalving)
REDUCESCATTER(ompi_coll_base_reduce_scatter_intra_ring)
REDUCESCATTER(ompi_coll_base_reduce_scatter_intra_butterfly)

/* BCAST_ARGS: buf, count, dtype, root, comm, module */
#define BCAST_SEG(name) WRAP(name, count, (P b, int count, P d, int root, P c, P m, uint32_t seg), \
                             (b, count, d, root, c, m, seg))
WRAP(ompi_coll_base_bcast_intra_basic_linear, count, (P b, int count, P d, int root, P c, P m),
     (b, count, d, root, c, m))
BCAST_SEG(ompi_coll_base_bcast_intra_pipeline)
BCAST_SEG(ompi_coll_base_bcast_intra_binomial)
BCAST_SEG(ompi_coll_base_bcast_intra_bintree)
BCAST_SEG(ompi_coll_base_bcast_intra_split_bintree)
BCAST_SEG(ompi_coll_base_bcast_intra_scatter_allgather)
BCAST_SEG(ompi_coll_base_bcast_intra_scatter_allgather_ring)
WRAP(ompi_coll_base_bcast_intra_chain, count, (P b, int count, P d, int root, P c, P m, uint32_t seg, int32_t chains),
     (b, count, d, root, c, m, seg, chains))
WRAP(ompi_coll_base_bcast_intra_knomial, count, (P b, int count, P d, int root, P c, P m, uint32_t seg, int radix),
     (b, count, d, root, c, m, seg, radix))

/* REDUCE_ARGS: sbuf, rbuf, count, dtype, op, root, comm, module */
#define REDUCE_SEG(name) WRAP(name, count, (P s, P r, int count, P d, P o, int root, P c, P m, uint32_t seg, int mr), \
                              (s, r, count, d, o, root, c, m, seg, mr))
WRAP(ompi_coll_base_reduce_intra_basic_linear, count, (P s, P r, int count, P d, P o, int root, P c, P m),
     (s, r, count, d, o, root, c, m))
WRAP(ompi_coll_base_reduce_intra_redscat_gather, count, (P s, P r, int count, P d, P o, int root, P c, P m),
     (s, r, count, d, o, root, c, m))
WRAP(ompi_coll_base_reduce_intra_chain, count,
     (P s, P r, int count, P d, P o, int root, P c, P m, uint32_t seg, int fanout, int mr),
     (s, r, count, d, o, root, c, m, seg, fanout, mr))
REDUCE_SEG(ompi_coll_base_reduce_intra_pipeline)
REDUCE_SEG(ompi_coll_base_reduce_intra_binary)
REDUCE_SEG(ompi_coll_base_reduce_intra_binomial)
REDUCE_SEG(ompi_coll_base_reduce_intra_in_order_binary)

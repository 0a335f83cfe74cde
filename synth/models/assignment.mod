/* synth choice problem (synth/solve/problem.py) in MathProg, for glpsol.

   Items each choose exactly one allowed candidate. Every group bounds how many of its
   (item, candidate) pairs are chosen, each counted with its item's weight (1 unless the data
   gives weights; the bytes of a flow for path selection's bytes objective): lower <= count <=
   upper, or count <= upper + zcoef x z[zof] for capped groups, and the sum of the z >= 0 is
   minimized (one z unless the data gives several: a schedule's steps). The per-layer XGFT routing model of
   [Prisacari20] (eq. 3.6-3.15) is written this way by synth; with no capped group
   the objective is constant and any feasible solution is optimal (optimality embedded in
   feasibility, as in the seed).

   Run:  glpsol --math assignment.mod --data problem.dat --intopt --binarize --fpump
*/

set I;                          /* items (messages, flows) */
set A dimen 2;                  /* allowed (item, candidate) pairs */
set G;                          /* groups */
set P{G} dimen 2 within A;      /* the pairs a group counts */
param lower{G} integer >= 0;
param upper{G} integer >= 0;
param capped{G} binary;
param weight{I} integer > 0, default 1;
set K default {0};              /* the z variables */
param zof{G} integer, in K, default 0;
param zcoef{G} integer > 0, default 1;
param zmax integer >= 0;
param out symbolic;             /* file the chosen pairs are written to */

var x{A} binary;
var z{K} integer >= 0, <= zmax;

minimize max_capped: sum{k in K} z[k];

s.t. one{i in I}: sum{(i, k) in A} x[i, k] = 1;
s.t. at_least{g in G: lower[g] > 0}: sum{(i, k) in P[g]} weight[i] * x[i, k] >= lower[g];
s.t. at_most{g in G: capped[g] = 0}: sum{(i, k) in P[g]} weight[i] * x[i, k] <= upper[g];
s.t. at_most_z{g in G: capped[g] = 1}: sum{(i, k) in P[g]} weight[i] * x[i, k] <= upper[g] + zcoef[g] * z[zof[g]];

solve;

printf "z %d\n", sum{k in K} z[k] > out;
printf{(i, k) in A: x[i, k] > 0.5} "%d %d\n", i, k >> out;

end;

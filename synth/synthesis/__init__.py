"""Schedule synthesis (issue 24): step schedules of collectives made by optimization, each with
the lower bounds it is measured against.

- transfers: which rank pairs a schedule may use in one step, and what each costs (its channels,
  routed once by a router of synth, and its port, under the cost model of synth.pricing.alphabeta);
- bounds: the step bound (spreading with the transfers a rank has, distances in the transfer
  graph) and the bandwidth bound (the cut bound by max-flow), and from them a time bound per size;
- exact: the time-expanded integer program (which block reaches which rank from whom in which
  step), in the project's one problem form (synth.solve.problem): the least step count, proven,
  and per step count the least bandwidth term (the Pareto front of steps against bandwidth).
"""

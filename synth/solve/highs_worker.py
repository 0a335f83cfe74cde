"""Helper process for the HiGHS backend: reads a pickled (problem, time limit, threads) on stdin,
writes the pickled SolveResult on stdout. Never imports OR-Tools (see synth.solve)."""

import pickle
import sys

from synth.solve.pulp_backend import solve_pulp


def main() -> None:
    problem, time_limit, threads = pickle.loads(sys.stdin.buffer.read())
    result = solve_pulp(problem, "highs", time_limit, threads)
    sys.stdout.buffer.write(pickle.dumps(result))


if __name__ == "__main__":
    main()

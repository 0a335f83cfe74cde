"""Helper process for the HiGHS backend: reads a pickled (problem, time limit, threads) on stdin,
writes the pickled SolveResult on stdout. Never imports OR-Tools (see synth.solve)."""

import os
import pickle
import sys

from synth.solve.pulp_backend import solve_pulp


def main() -> None:
    problem, time_limit, threads = pickle.loads(sys.stdin.buffer.read())
    # HiGHS writes its banner to file descriptor 1 from C (1.16 does so even when asked to be
    # quiet), which would corrupt the pickle: the result leaves by a copy of the original stdout,
    # and whatever the libraries print goes to stderr.
    result_fd = os.dup(1)
    os.dup2(2, 1)
    result = solve_pulp(problem, "highs", time_limit, threads)
    with os.fdopen(result_fd, "wb") as out:
        out.write(pickle.dumps(result))


if __name__ == "__main__":
    main()

"""Executing schedules over MPI (`synth run`): one MPI process per rank replays a verified
synth-schedule/1 file with real buffers, checks the result against the MPI library's own collective
on the same input, and times both (synth.run.executor in the ranks, synth.run.launch around mpirun)."""

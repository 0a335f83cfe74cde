"""Simulation on SimGrid (issue 25): a platform built from a synth network and its paths, schedules
and routed phases replayed on it, each run in a worker process of its own (synth.simulation.runner).

SimGrid is the seeds' simulator (000 and 004 validate their collectives with SimGrid 3.28: flow
level, max-min sharing of every link between the flows crossing it). Nothing here simulates by
itself: synth.simulation.platform turns a network, transfers and their channel paths into arrays
(hosts, links, routes, transfers), synth.simulation.worker hands them to SimGrid, and
synth.simulation.simgrid_module finds SimGrid's Python module (Debian's python3-simgrid or PyPI's
simgrid).
"""
